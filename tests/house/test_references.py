"""Comments and docs cite what a reader of the repository can open: a document they name under
``docs/`` exists, and none cites a section of a specification the repository does not hold
("SPEC §6"): such a comment states the fact itself or links a file of the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_DOC_PATH = re.compile(r"\bdocs/[\w.-]+\.(?:md|svg|png)\b")
_SPEC_SECTION = re.compile(r"\bSPEC\s*§")


def _texts() -> list[Path]:
    code = [p for folder in ("remat_lint", "rules", "tests", "bench") for p in (ROOT / folder).rglob("*.py")]
    mine = Path(__file__).resolve()  # its examples below cite what must not be cited
    return sorted(p for p in [*code, *ROOT.glob("*.md"), *(ROOT / "docs").glob("*.md")] if p != mine)


def cited_problems(text: str) -> list[str]:
    """The citations in ``text`` that a reader of the repository cannot follow."""
    missing = [path for path in _DOC_PATH.findall(text) if not (ROOT / path).is_file()]
    return missing + _SPEC_SECTION.findall(text)


@pytest.mark.parametrize("path", _texts(), ids=lambda p: str(p.relative_to(ROOT)))
def test_citations_name_files_of_the_repository(path):
    assert not cited_problems(path.read_text(encoding="utf-8")), path


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("# barriers survive on CPU (SPEC §6).", ["SPEC §"]),
        ("see docs/nowhere.md", ["docs/nowhere.md"]),
        ("see docs/cache.md and README.md", []),
        ("a spec §6 of JAX's docs", []),
    ],
)
def test_what_counts_as_an_unfollowable_citation(text, expected):
    assert cited_problems(text) == expected
