"""REM201 on writes to variables of enclosing functions (analysis/effects.py).

Through ``nonlocal``, the name belongs to the function that binds it, not to a function between
that merely declares it: a helper inside the checkpointed body writing a variable of the function
around the checkpoint is reported, one writing a variable of the body itself is not. A decorated
step defined in a function and handed to ``lax.scan`` there writes that function's variables
afresh on every call (recording a shape is the usual reason): quiet; the same step returned for a
caller to run writes state that outlives the call: reported."""

from __future__ import annotations

import pytest

from tests.helpers import lint

HELPER_WRITES = """\
import jax

def outer():
{outer_binding}
    @jax.checkpoint
    def body(y):
{body_binding}
        def helper():
            nonlocal count
            count += 1
        helper()
        return y
    return body
"""


def rem201(outer_binding: str, body_binding: str) -> list[tuple[int, str]]:
    source = HELPER_WRITES.format(outer_binding=outer_binding, body_binding=body_binding)
    return [(f.start.row, f.title) for f in lint(source) if f.code == "REM201"]


def test_a_helper_in_the_body_writing_the_enclosing_functions_variable_is_reported():
    assert rem201("    count = 0", "") == [(10, "A checkpointed function writes `count` of an enclosing function")]


def test_a_helper_in_the_body_writing_the_bodys_own_variable_is_quiet():
    assert rem201("", "        count = 0") == []


RUN = """\
import jax

def run(xs):
    shapes = []

    @jax.checkpoint
    def step(carry, x):
        shapes.append(x.shape)
        return carry + x, x

    return {used}, shapes
"""


@pytest.mark.parametrize(("used", "rows"), [("jax.lax.scan(step, 0.0, xs)", []), ("step", [8])])
def test_a_decorated_step_writes_per_call_state_only_when_handed_to_a_call_there(used, rows):
    assert [f.start.row for f in lint(RUN.format(used=used)) if f.code == "REM201"] == rows
