"""Every fixture module, through the CLI's JSON and through real flake8, must match its
``# expect: CODE[,CODE]`` annotations exactly: same lines, same codes, and the two interfaces
must agree on columns (flake8 prints our 0-based column + 1, the CLI prints 1-based columns).

The CLI lints all fixtures in one run, so project-wide rules (REM008) see every fixture's names.
A fixture whose findings depend on the whole project says ``# fixture-group: NAME``: the fixtures
of one group are linted in a run of their own. flake8 sees one file at a time and does not report
project-wide rules.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from remat_lint.registry import all_rules
from remat_lint.rule import Rule

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted(p for p in (ROOT / "fixtures").rglob("*.py"))
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>REM\d{3}(?:\s*,\s*REM\d{3})*)")
GROUP = re.compile(r"^# fixture-group: (\S+)$", re.M)
PROJECT_WIDE = {rule.code for rule in all_rules() if rule.project_filter.__func__ is not Rule.project_filter.__func__}


def groups() -> list[list[Path]]:
    """The fixtures linted together: one group per ``# fixture-group:`` name, then all others."""
    named: dict[str, list[Path]] = {}
    for path in FIXTURES:
        match = GROUP.search(path.read_text(encoding="utf-8"))
        named.setdefault(match.group(1) if match else "", []).append(path)
    return [paths for _, paths in sorted(named.items())]


def expected(path: Path) -> Counter[tuple[int, str]]:
    found: Counter[tuple[int, str]] = Counter()
    for row, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            for code in match.group("codes").split(","):
                found[(row, code.strip())] += 1
    return found


@pytest.fixture(scope="session")
def cli_results() -> dict[str, list[dict]]:
    by_file: dict[str, list[dict]] = {}
    for group in groups():
        proc = subprocess.run(
            [sys.executable, "-m", "remat_lint", "--select", "ALL", "--output-format", "json", *map(str, group)],
            capture_output=True, text=True, cwd=ROOT,
        )
        assert proc.returncode in (0, 1), proc.stderr
        for item in json.loads(proc.stdout):
            by_file.setdefault(str((ROOT / item["filename"]).resolve()), []).append(item)
    return by_file


@pytest.fixture(scope="session")
def flake8_results() -> dict[str, list[tuple[int, int, str]]]:
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select=REM", "--format=%(path)s|%(row)d|%(col)d|%(code)s",
         *map(str, FIXTURES)],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert proc.returncode in (0, 1), proc.stderr
    by_file: dict[str, list[tuple[int, int, str]]] = {}
    for line in proc.stdout.splitlines():
        path, row, col, code = line.rsplit("|", 3)
        by_file.setdefault(str(Path(path).resolve()), []).append((int(row), int(col), code))
    return by_file


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: str(p.relative_to(ROOT / "fixtures")))
def test_cli_matches_annotations(fixture, cli_results):
    got = Counter((item["location"]["row"], item["code"]) for item in cli_results.get(str(fixture), []))
    assert sorted(got.elements()) == sorted(expected(fixture).elements())


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: str(p.relative_to(ROOT / "fixtures")))
def test_flake8_matches_cli(fixture, cli_results, flake8_results):
    cli = sorted(
        (i["location"]["row"], i["location"]["column"], i["code"])
        for i in cli_results.get(str(fixture), [])
        if i["code"] not in PROJECT_WIDE
    )
    assert sorted(flake8_results.get(str(fixture), [])) == cli
