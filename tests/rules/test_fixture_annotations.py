"""Every fixture module, through the CLI's JSON and through real flake8, must match its
``# expect: CODE[,CODE]`` annotations exactly: same lines, same codes, and the two interfaces
must agree on columns (flake8 prints our 0-based column + 1, the CLI prints 1-based columns).
flake8 sees one file at a time; project-wide rules (REM008, REM101) see the other files of its
project, as the CLI does (fixtures whose findings depend on other files sit in a folder with a
pyproject.toml of its own: the repository's configuration excludes fixtures from its project).

tests/output/test_snapshots.py pins the rest of what a user sees of the same runs: end positions,
messages and fixes.
"""

from __future__ import annotations

import io
import json
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

from remat_lint.cli import command as cli
from tests.fixture_runs import FIXTURES, ROOT, fixture_id

EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>REM\d{3}(?:\s*,\s*REM\d{3})*)")


def expected(path: Path) -> Counter[tuple[int, str]]:
    found: Counter[tuple[int, str]] = Counter()
    for row, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = EXPECT.search(line)
        if match:
            for code in match.group("codes").split(","):
                found[(row, code.strip())] += 1
    return found


@pytest.mark.parametrize("fixture", FIXTURES, ids=fixture_id)
def test_cli_matches_annotations(fixture, cli_results):
    got = Counter((item["location"]["row"], item["code"]) for item in cli_results.get(str(fixture), []))
    assert sorted(got.elements()) == sorted(expected(fixture).elements())


@pytest.mark.parametrize("fixture", FIXTURES, ids=fixture_id)
def test_flake8_matches_cli(fixture, cli_results, flake8_results):
    cli = sorted((i["location"]["row"], i["location"]["column"], i["code"]) for i in cli_results.get(str(fixture), []))
    assert sorted(row[:3] for row in flake8_results.get(str(fixture), [])) == cli


PACKAGE_FIXTURES = [
    path
    for path in FIXTURES
    if any(
        (folder / "pyproject.toml").exists()
        for folder in path.parents[:-1]
        if folder != ROOT and ROOT in folder.parents
    )
]


@pytest.mark.parametrize("fixture", PACKAGE_FIXTURES, ids=fixture_id)
def test_a_package_fixture_linted_alone_matches_annotations(fixture, monkeypatch, capsys):
    """As pre-commit (the staged file), an editor (stdin) and flake8 (test_flake8_matches_cli) lint
    it: the other files of its project count, and only its own findings are reported."""
    path = str(fixture.relative_to(ROOT))
    monkeypatch.chdir(ROOT)
    for args, stdin in (
        (["--no-cache", path], None),
        (["--no-cache", "--stdin-filename", path, "-"], fixture.read_bytes()),
    ):
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        assert cli.main(["--select", "ALL", "-j", "1", "--output-format", "json", *args]) in (0, 1)
        got = Counter((item["location"]["row"], item["code"]) for item in json.loads(capsys.readouterr().out))
        assert sorted(got.elements()) == sorted(expected(fixture).elements()), args
