"""REM006 (decorator factory without its target): a case found by mutation testing that no other test
pinned."""

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
