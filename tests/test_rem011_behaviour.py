"""REM011 (bad static_argnums): cases found by mutation testing that no other test pinned."""

from __future__ import annotations

from tests.helpers import lint

BLOCK = """
import flax.linen as nn
class Block(nn.Module):
    @nn.compact
    def __call__(self, x, deterministic: bool, y):
        return x if deterministic else y
R = nn.remat(Block, static_argnums={indices})
"""


def test_the_flax_off_by_one_is_found_after_an_index_with_no_neighbour() -> None:
    """Index 3 selects the last argument (nothing after it to be meant instead); index 1 after it
    still selects `x` where `deterministic` was meant."""
    [finding] = lint(BLOCK.format(indices="(3, 1)"), {"REM011"})
    assert "`nn.remat` counts `self` as argument 0, so index 1 selects `x`, not `deterministic`" in finding.message
