"""REM002 (unknown keyword, misplaced positional arguments): cases found by mutation testing that
no other test pinned."""

from __future__ import annotations

from tests.helpers import lint


def test_too_many_positional_arguments_to_nn_remat_quote_flaxs_typeerror() -> None:
    """flax 0.12.8: ``nn.remat(Block, True, True, None, (), None, None, None, None)`` raises
    ``TypeError: checkpoint() takes from 1 to 8 positional arguments but 9 were given``."""
    [finding] = lint("import flax.linen as nn\nR = nn.remat(Block, True, True, None, (), None, None, None, None)\n", {"REM002"})
    assert finding.message == (
        "`nn.remat` takes at most 7 arguments after the target. It raises `TypeError: checkpoint() takes from 1 to 8 "
        "positional arguments but 9 were given` when it wraps the target"
    )
