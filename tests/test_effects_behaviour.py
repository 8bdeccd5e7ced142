"""REM201 on writes through ``nonlocal`` (analysis/effects.py): the name belongs to the function
that binds it, not to a function between that merely declares it, so a helper inside the
checkpointed body writing a variable of the function around the checkpoint is reported, and one
writing a variable of the body itself is not."""

from __future__ import annotations

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
