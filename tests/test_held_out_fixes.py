"""Applying fixes together (remat_lint/fixes.py), pinned where a hand-made edit of 2026-11-25
passed the suite: two insertions at one point are not applied in the same pass (the same import
would be added twice; the second waits for the re-lint); a whole line inserted above a line with a
``# noqa`` changes no line the noqa covers, so ``--fix`` applies it."""

from __future__ import annotations

from remat_lint.autofix import fixable
from remat_lint.findings import Applicability, Finding, Fix, Position, Severity, TextEdit
from remat_lint.fixes import apply_edits, non_overlapping


def _fixing(start: Position, end: Position, content: str) -> Finding:
    fix = Fix("fix", Applicability.SAFE, (TextEdit(start, end, content),))
    return Finding("REM005", "removed-api", Severity.ERROR, "m", "m.py", start, end, fix)


def test_insertions_at_one_point_go_one_per_pass():
    top = Position(1, 0)
    twice = [_fixing(top, top, "import jax\n"), _fixing(top, top, "import jax\n")]
    [chosen] = non_overlapping(twice)
    assert apply_edits("x = 1\n", chosen.fix.edits) == "import jax\nx = 1\n"
    apart = [_fixing(Position(1, 0), Position(1, 1), "y"), _fixing(Position(1, 2), Position(1, 3), "z")]
    assert non_overlapping(apart) == apart


def test_a_line_inserted_above_a_noqa_line_is_still_fixed():
    source = "import jax\ng = jax.checkpoint(f)  # noqa: REM999\n"
    above = _fixing(Position(2, 0), Position(2, 0), "import functools\n")
    inside = _fixing(Position(2, 4), Position(2, 6), "h")
    assert fixable([above, inside], {"m.py": source}, unsafe=False) == [above]
