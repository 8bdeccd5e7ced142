"""REM006 (decorator factory without its target) and REM007 (discarded checkpoint): cases found
by mutation testing that no other test pinned."""

from __future__ import annotations

from tests.helpers import lint

GUARDED_DECORATOR = """
import jax
try:
    @jax.checkpoint(policy=jax.checkpoint_policies.dots_saveable)
    def g(x):
        return x
except {}:
    pass
"""


def test_rem006_is_quiet_where_the_typeerror_is_caught_and_reported_under_another_handler() -> None:
    assert lint(GUARDED_DECORATOR.format("TypeError"), {"REM006"}) == []
    assert [f.code for f in lint(GUARDED_DECORATOR.format("KeyError"), {"REM006"})] == ["REM006"]


def test_rem007_names_the_function_left_unchanged_or_says_its_argument() -> None:
    [spread] = lint("import jax\nfs = [f]\njax.checkpoint(*fs)\n", {"REM007"})
    [named] = lint("import jax\njax.checkpoint(fun=f)\n", {"REM007"})
    tail = "unchanged, so nothing is checkpointed; assign the result and use it, or apply it as a decorator"
    assert spread.message == f"The result of `jax.checkpoint` is discarded. It returns a checkpointed version and leaves its argument {tail}"
    assert named.message == f"The result of `jax.checkpoint` is discarded. It returns a checkpointed version and leaves `f` {tail}"
