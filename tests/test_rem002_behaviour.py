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


def test_a_misspelled_keyword_gets_the_closest_real_one() -> None:
    """jax 0.10.2 and flax 0.12.8 both raise ``TypeError: checkpoint() got an unexpected keyword
    argument 'prevent_cs'``."""
    [jax_finding] = lint("import jax\ng = jax.checkpoint(f, prevent_cs=True)\n", {"REM002"})
    [flax_finding] = lint("import flax.linen as nn\nR = nn.remat(Block, prevent_cs=True)\n", {"REM002"})
    tail = ("does not take `prevent_cs=` (did you mean `prevent_cse=`?). It raises `TypeError: checkpoint() got an "
            "unexpected keyword argument 'prevent_cs'` when it wraps the function")
    assert jax_finding.message == f"`jax.checkpoint` {tail}"
    assert flax_finding.message == f"`nn.remat` {tail}"
