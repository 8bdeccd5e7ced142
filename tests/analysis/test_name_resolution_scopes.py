"""What a name refers to where Python's scoping rules are unusual, seen through the findings that
depend on it (analysis/semantic.py): a name rebound to something else resolves to nothing, so the
rules stay quiet there and keep reporting where the import still holds."""

from __future__ import annotations

from tests.helpers import lint


def rows(source: str, code: str) -> list[int]:
    return [f.start.row for f in lint(source) if f.code == code]


def test_a_walrus_in_a_comprehension_rebinds_the_name_in_the_enclosing_function():
    # PEP 572: `checkpoint := ...` inside the list comprehension binds `checkpoint` in build(), so
    # the call on line 9 is no longer jax.checkpoint; plain() still calls the import.
    source = """\
from jax import checkpoint

def block(x):
    return x

def build(makers):
    [checkpoint := make for make in makers]
    return checkpoint(block, policy="dots_saveable")

def plain():
    return checkpoint(block, policy="dots_saveable")
"""
    assert rows(source, "REM001") == [11]


def test_names_that_alias_each_other_in_a_loop_are_resolved_without_an_error():
    # `previous` and `wrap` refer to each other: resolution stops at the cycle (no REM000).
    source = """\
import jax

wrap = jax.checkpoint
for _ in range(3):
    previous = wrap
    wrap = previous
g = wrap(f, policy="dots_saveable")
"""
    assert "REM000" not in [f.code for f in lint(source)]
