"""REM002 (unknown keyword, misplaced positional arguments): cases found by mutation testing that
no other test pinned."""

from __future__ import annotations

from tests.helpers import lint


def test_too_many_positional_arguments_to_nn_remat_quote_flaxs_typeerror() -> None:
    """flax 0.12.8: ``nn.remat(Block, True, True, None, (), None, None, None, None)`` raises
    ``TypeError: checkpoint() takes from 1 to 8 positional arguments but 9 were given``."""
    [finding] = lint(
        "import flax.linen as nn\nR = nn.remat(Block, True, True, None, (), None, None, None, None)\n", {"REM002"}
    )
    assert finding.message == (
        "`nn.remat` takes at most 7 arguments after the target. It raises `TypeError: checkpoint() takes from 1 to 8 "
        "positional arguments but 9 were given` when it wraps the target"
    )


def test_a_misspelled_keyword_gets_the_closest_real_one() -> None:
    """jax 0.10.2 and flax 0.12.8 both raise ``TypeError: checkpoint() got an unexpected keyword
    argument 'prevent_cs'``."""
    [jax_finding] = lint("import jax\ng = jax.checkpoint(f, prevent_cs=True)\n", {"REM002"})
    [flax_finding] = lint("import flax.linen as nn\nR = nn.remat(Block, prevent_cs=True)\n", {"REM002"})
    tail = (
        "does not take `prevent_cs=` (did you mean `prevent_cse=`?). It raises `TypeError: checkpoint() got an "
        "unexpected keyword argument 'prevent_cs'` when it wraps the function"
    )
    assert jax_finding.message == f"`jax.checkpoint` {tail}"
    assert flax_finding.message == f"`nn.remat` {tail}"


def test_concrete_on_an_api_without_it_points_to_static_argnums() -> None:
    [finding] = lint("from flax import nnx\ng = nnx.remat(f, concrete=False)\n", {"REM002"})
    assert finding.message == (
        "`nnx.remat` does not take `concrete=` (JAX removed `concrete` in 0.10.0; use `static_argnums=`). It raises "
        "`TypeError: remat() got an unexpected keyword argument 'concrete'` when it wraps the function"
    )


def test_a_call_without_the_function_raises_right_there() -> None:
    """jax 0.10.2: ``jax.checkpoint(prevent_cs=True)`` raises the TypeError itself."""
    [finding] = lint("import jax\nd = jax.checkpoint(prevent_cs=True)\n", {"REM002"})
    assert finding.message.endswith("got an unexpected keyword argument 'prevent_cs'` right here, when called")


def test_a_decorator_factory_with_an_unknown_keyword_is_reported_once() -> None:
    [finding] = lint("from flax import nnx\n@nnx.remat(checkpoint_policy=p)\ndef f(x):\n    return x\n", {"REM002"})
    assert finding.message.startswith("`nnx.remat` does not take `checkpoint_policy=` (did you mean `policy=`?)")


def test_quiet_where_the_typeerror_is_caught_and_reported_under_another_handler() -> None:
    guarded = "import jax\ntry:\n    g = jax.checkpoint(f, prevent_cs=True)\nexcept {}:\n    pass\n"
    assert lint(guarded.format("TypeError"), {"REM002"}) == []
    assert len(lint(guarded.format("KeyError"), {"REM002"})) == 1


def test_an_option_passed_positionally_to_jax_checkpoint() -> None:
    """jax 0.10.2: ``checkpoint() takes 1 positional argument but 2 were given``."""
    [finding] = lint("import jax\ng = jax.checkpoint(f, True)\n", {"REM002"})
    assert finding.message == (
        "`jax.checkpoint` takes only the function positionally. It raises `TypeError: checkpoint() takes 1 positional "
        "argument but 2 were given` when it wraps the function; pass options by keyword"
    )
