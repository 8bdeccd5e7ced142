"""Which checkpoint sites ``analysis/sites.py`` finds, seen through the findings about their
arguments; written against surviving mutants (docs/mutation-testing.md)."""

from __future__ import annotations

import pytest

from tests.helpers import lint

_HEAD = "import jax\nfrom functools import partial\n"


@pytest.mark.parametrize(
    ("first", "code"),
    [("policy='dots_saveable'", "REM001"), ("polcy=1", "REM002")],
)
def test_a_partial_extended_by_another_partial_is_one_site(first: str, code: str):
    source = _HEAD + f"r1 = partial(jax.checkpoint, {first})\nr2 = partial(r1, prevent_cse=False)\n"
    assert [f.code for f in lint(source)] == [code]


def _renamed_partials(names: int) -> str:
    """r0 = partial(jax.checkpoint), r1 = partial(r0), ... and the last applied with a string policy."""
    source = _HEAD + "r0 = partial(jax.checkpoint)\n"
    source += "".join(f"r{i} = partial(r{i - 1})\n" for i in range(1, names))
    return source + f"g = r{names - 1}(f, policy='dots_saveable')\n"


def test_partials_bound_to_names_are_followed_four_deep_and_no_more():
    assert [(f.code, f.start.row) for f in lint(_renamed_partials(4))] == [("REM001", 7)]
    assert lint(_renamed_partials(5)) == []
