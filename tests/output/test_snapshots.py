"""Snapshot tests, as ruff's ``.snap`` files: for every fixture, what a user sees of it is checked in
beside the tests (``tests/output/snapshots/<fixture>.snap``) and compared exactly: each finding's
``row:col-endrow:endcol CODE message`` and the ``detail`` after it (the CLI's JSON, every rule
selected), its fix title and
applicability, and the ``--diff --unsafe-fixes`` of the file. flake8's rows, columns and texts are
compared with the same snapshot.

After a deliberate change in output, rewrite the snapshots and review the diff before committing:

    UPDATE_SNAPSHOTS=1 python -m pytest -q tests/output/test_snapshots.py
    git diff tests/output/snapshots/
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fixture_runs import FIXTURES, fixture_id

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
UPDATE = os.environ.get("UPDATE_SNAPSHOTS") == "1"


def snapshot_path(fixture: Path) -> Path:
    return SNAPSHOTS / (fixture_id(fixture).replace("/", "__").removesuffix(".py") + ".snap")


def _position(item: dict) -> str:
    start, end = item["location"], item["end_location"]
    return f"{start['row']}:{start['column']}-{end['row']}:{end['column']}"


def render(findings: list[dict], diff: str) -> str:
    lines = ["## findings (remat-lint --select ALL --output-format json)"]
    for item in findings:
        lines.append(f"{_position(item)} {item['code']} {item['message']}")
        if item.get("detail"):
            lines.append(f"    why: {item['detail']}")
        if item.get("fix"):
            lines.append(f"    fix ({item['fix']['applicability']}): {item['fix']['message']}")
    lines += ["", "## remat-lint --select ALL --diff --unsafe-fixes", diff.rstrip("\n") or "(no fixes)"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("fixture", FIXTURES, ids=fixture_id)
def test_cli_output_matches_snapshot(fixture, cli_results, cli_diffs):
    got = render(cli_results.get(str(fixture), []), cli_diffs.get(str(fixture), ""))
    path = snapshot_path(fixture)
    if UPDATE:
        path.write_text(got, encoding="utf-8")
    assert path.exists(), f"no snapshot: run UPDATE_SNAPSHOTS=1 python -m pytest -q {Path(__file__).name}"
    assert got == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("fixture", FIXTURES, ids=fixture_id)
def test_flake8_output_matches_snapshot(fixture, flake8_results):
    """flake8 shows the same row, column (1-based) and message as the CLI for every finding it reports."""
    snapshot = snapshot_path(fixture).read_text(encoding="utf-8").splitlines()
    for row, col, code, text in flake8_results.get(str(fixture), []):
        line = next((s for s in snapshot if s.startswith(f"{row}:{col}-") and f" {code} " in s), None)
        assert line is not None, f"flake8 reports {code} at {row}:{col}, which the snapshot does not hold"
        assert line.split(f" {code} ", 1)[1] == text
