"""How the fixture tests run the fixtures: every fixture through the CLI (JSON and ``--diff``) and
through real flake8, once per test session.

The CLI runs in the test process (``cli.main``), so that a mutation run (docs/mutation-testing.md)
sees the snapshot tests fail on a mutant; flake8 is a program of its own and runs in a subprocess.

The CLI lints all fixtures in one run, so project-wide rules (REM008) see every fixture's names.
A fixture whose findings depend on the whole project says ``# fixture-group: NAME``: the fixtures
of one group are linted in a run of their own. flake8 sees one file at a time.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import pytest

from remat_lint.cli import command as cli

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted(p for p in (ROOT / "fixtures").rglob("*.py"))
GROUP = re.compile(r"^# fixture-group: (\S+)$", re.M)
DIFF_HEADER = re.compile(r"^--- a/(?P<path>.+)$", re.M)


def fixture_id(path: Path) -> str:
    return str(path.relative_to(ROOT / "fixtures"))


def groups() -> list[list[Path]]:
    """The fixtures linted together: one group per ``# fixture-group:`` name, then all others."""
    named: dict[str, list[Path]] = {}
    for path in FIXTURES:
        match = GROUP.search(path.read_text(encoding="utf-8"))
        named.setdefault(match.group(1) if match else "", []).append(path)
    return [paths for _, paths in sorted(named.items())]


def _cli(*args: str) -> str:
    """What ``remat-lint --select ALL --no-cache ARGS`` prints on stdout, run from the repository root."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(ROOT), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["--select", "ALL", "--no-cache", "-j", "1", *args])
    assert code in (0, 1), err.getvalue()
    return out.getvalue()


@pytest.fixture(scope="session")
def cli_results() -> dict[str, list[dict]]:
    """Per fixture path: the CLI's JSON findings."""
    by_file: dict[str, list[dict]] = {}
    for group in groups():
        for item in json.loads(_cli("--output-format", "json", *map(str, group))):
            by_file.setdefault(str((ROOT / item["filename"]).resolve()), []).append(item)
    return by_file


@pytest.fixture(scope="session")
def cli_diffs() -> dict[str, str]:
    """Per fixture path: what ``--diff --unsafe-fixes`` prints for it (every fix, safe and unsafe)."""
    by_file: dict[str, str] = {}
    for group in groups():
        text = _cli("--diff", "--unsafe-fixes", *(str(p.relative_to(ROOT)) for p in group))
        bounds = [match.start() for match in DIFF_HEADER.finditer(text)] + [len(text)]
        for start, end in pairwise(bounds):
            path = DIFF_HEADER.match(text, start).group("path")  # type: ignore[union-attr]
            by_file[str((ROOT / path).resolve())] = text[start:end]
    return by_file


@pytest.fixture(scope="session")
def flake8_results() -> dict[str, list[tuple[int, int, str, str]]]:
    """Per fixture path: flake8's (row, column, code, text) for every REM finding."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "flake8",
            "--isolated",
            "--select=REM",
            "--format=%(path)s|%(row)d|%(col)d|%(code)s|%(text)s",
            *map(str, FIXTURES),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode in (0, 1), proc.stderr
    by_file: dict[str, list[tuple[int, int, str, str]]] = {}
    for line in proc.stdout.splitlines():
        path, row, col, code, text = line.split("|", 4)
        by_file.setdefault(str(Path(path).resolve()), []).append((int(row), int(col), code, text))
    return by_file
