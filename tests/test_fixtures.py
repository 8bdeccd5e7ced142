"""Every fixture module, through the CLI's JSON and through real flake8, must match its
``# expect: CODE[,CODE]`` annotations exactly: same lines, same codes, and the two interfaces
must agree on columns (flake8 prints our 0-based column + 1, the CLI prints 1-based columns).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted(p for p in (ROOT / "fixtures").rglob("*.py"))
EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>REM\d{3}(?:\s*,\s*REM\d{3})*)")


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
    proc = subprocess.run(
        [sys.executable, "-m", "remat_lint", "--select", "ALL", "--output-format", "json",
         *map(str, FIXTURES)],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert proc.returncode in (0, 1), proc.stderr
    by_file: dict[str, list[dict]] = {}
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
    cli = sorted((i["location"]["row"], i["location"]["column"], i["code"]) for i in cli_results.get(str(fixture), []))
    assert sorted(flake8_results.get(str(fixture), [])) == cli
