"""REM011 (bad static_argnums): cases found by mutation testing that no other test pinned."""

from __future__ import annotations

import textwrap

from remat_lint.config import RuleSelection, Settings
from remat_lint.resolver import Resolver
from remat_lint.runner import run
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


LAYERS = """
import flax.linen as nn
class Block(nn.Module):
    @nn.compact
    def __call__(self, x, deterministic: bool):
        return x if deterministic else -x
"""
MODEL = """
import flax.linen as nn
from .layers import Block
R = nn.remat(Block, static_argnums=(3,))
"""


def test_an_index_past_an_imported_class_names_the_valueerror_and_the_class_file(tmp_path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    for name, text in {"__init__.py": "", "layers.py": LAYERS, "model.py": MODEL}.items():
        (package / name).write_text(textwrap.dedent(text))
    result = run([str(package / "layers.py"), str(package / "model.py")],
                 Resolver.of(Settings(selection=[RuleSelection(select=("REM011",))])))
    [finding] = result.findings
    assert finding.message == (
        "`static_argnums=(3,)` fails or selects the wrong argument in `nn.remat`. Index 3 is out of range: "
        "`Block.__call__` takes 3 positional arguments counting `self`, so every call raises `ValueError: the "
        "static_argnums argument ... can only take integer values ... less than len(args)` (`Block` is defined in "
        "layers.py)"
    )
