"""What suppresses a finding, as a user writes it: ruff's spellings of ``# noqa`` (``#noqa``,
``# NOQA``, ``#noqa:REM001``) in the CLI and through flake8, ``--ignore-noqa``, and REM100
(``unused-noqa``), which reports a ``# noqa: REMnnn`` that suppressed nothing and removes it."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from remat_lint.cli import command as cli

FINDING = "g = jax.checkpoint(lambda x: x, policy='dots_saveable')"
CLEAN = "g = jax.checkpoint(lambda x: x, policy=jax.checkpoint_policies.dots_saveable)"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def findings(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[tuple[int, int, str, str]]]:
    code = cli.main(["-j", "1", "--output-format", "json", *args])
    out = capsys.readouterr().out
    return code, [(i["location"]["row"], i["location"]["column"], i["code"], i["message"]) for i in json.loads(out)]


def flake8(path: Path) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select=REM", "--format=%(row)d:%(col)d %(code)s", str(path)],
        capture_output=True,
        text=True,
    )
    return proc.stdout.splitlines()


@pytest.mark.parametrize(
    "comment", ["#noqa", "# NOQA", "#NoQA", "#noqa:REM001", "# noqa:REM001", "# noqa:  REM001", "#noqa: REM0"]
)
def test_ruffs_spellings_suppress_in_the_cli_and_flake8(project, capsys, comment):
    (project / "a.py").write_text(f"import jax\n{FINDING}  {comment}\n")
    assert findings(capsys, "--no-cache", "a.py") == (0, [])
    assert flake8(project / "a.py") == []


def test_a_comment_that_only_mentions_noqa_suppresses_nothing(project, capsys):
    (project / "a.py").write_text(f"import jax\n{FINDING}  # the noqa tradition\n")
    assert [f[2] for f in findings(capsys, "--no-cache", "a.py")[1]] == ["REM001"]
    assert flake8(project / "a.py") == ["2:5 REM001"]


@pytest.mark.parametrize("cache", [["--no-cache"], []])
def test_ignore_noqa_reports_what_inline_and_file_level_comments_suppress(project, capsys, cache):
    (project / "a.py").write_text(f"import jax\n{FINDING}  # noqa: REM001\n")
    (project / "b.py").write_text(f"# remat-lint: noqa\nimport jax\n{FINDING}\n")
    assert findings(capsys, *cache, "a.py", "b.py") == (0, [])  # fills the cache, when there is one
    code, found = findings(capsys, *cache, "--ignore-noqa", "a.py", "b.py")
    assert code == 1
    assert [(row, column, rule) for row, column, rule, _ in found] == [(2, 5, "REM001"), (3, 5, "REM001")]
    assert findings(capsys, *cache, "a.py", "b.py") == (0, [])


@pytest.mark.parametrize("cache", [["--no-cache"], []])
def test_ignore_noqa_lets_the_project_decide_a_suppressed_project_wide_candidate(project, capsys, cache):
    # REM008 is decided with every file in view: under --ignore-noqa, the name a.py declares stays
    # unreported and the typo is reported, though a `# noqa` hid both.
    (project / "a.py").write_text("from jax.ad_checkpoint import checkpoint_name\ny = checkpoint_name(1, 'hidden')\n")
    policy = "p = jax.checkpoint_policies.save_only_these_names('{}')  # noqa: REM008\n"
    (project / "b.py").write_text("import jax\n" + policy.format("hidden") + policy.format("hiden"))
    assert findings(capsys, *cache, "a.py", "b.py") == (0, [])
    code, found = findings(capsys, *cache, "--ignore-noqa", "a.py", "b.py")
    assert code == 1
    assert [(row, rule) for row, _, rule, _ in found] == [(3, "REM008")]


def test_unused_noqa_reports_the_directive_that_suppressed_nothing(project, capsys):
    (project / "a.py").write_text(
        f"import jax\n{CLEAN}  # noqa: REM001\n{FINDING}  # noqa: REM001, REM002\nh = 1  #noqa:REM999  # a typo\n"
    )
    code, found = findings(capsys, "--no-cache", "--extend-select", "REM100", "a.py")
    assert code == 1
    assert found == [
        (2, 80, "REM100", "Unused `noqa` directive (unused: `REM001`)"),
        (3, 58, "REM100", "Unused `noqa` directive (unused: `REM002`)"),
        (4, 8, "REM100", "Unused `noqa` directive (unknown: `REM999`)"),
    ]
    assert flake8(project / "a.py") == ["2:80 REM100", "3:58 REM100", "4:8 REM100"]


def test_unused_noqa_is_off_by_default(project, capsys):
    (project / "a.py").write_text(f"import jax\n{CLEAN}  # noqa: REM001\n")
    assert findings(capsys, "--no-cache", "a.py") == (0, [])


def test_unused_noqa_leaves_codes_whose_rule_did_not_run(project, capsys):
    (project / "a.py").write_text(f"import jax\n{CLEAN}  # noqa: REM001\n")
    (project / "test_a.py").write_text("import jax\njax.checkpoint(lambda x: x)  # noqa: REM007\n")
    assert findings(capsys, "--no-cache", "--select", "REM100,REM002", "a.py") == (0, [])
    assert findings(capsys, "--no-cache", "--extend-select", "REM100", "test_a.py") == (
        0,
        [],
    )  # REM007 is quiet in tests


def test_fix_removes_unused_codes_and_directives(project, capsys):
    source = (
        f"import jax\n{CLEAN}  # noqa: REM001\n{FINDING}  # noqa: REM001, E501, REM002\nh = 1  # noqa: REM999  # why\n"
    )
    (project / "a.py").write_text(source)
    assert cli.main(["--no-cache", "--extend-select", "REM100", "--fix", "a.py"]) == 0
    fixed = (project / "a.py").read_text()
    assert fixed == f"import jax\n{CLEAN}\n{FINDING}  # noqa: REM001, E501\nh = 1  # why\n"
    ast.parse(fixed)


def test_no_fix_where_text_follows_the_directive(project, capsys):
    (project / "a.py").write_text("h = 1  # noqa: REM999 because\n")
    assert cli.main(["--no-cache", "--extend-select", "REM100", "--fix", "a.py"]) == 1
    assert (project / "a.py").read_text() == "h = 1  # noqa: REM999 because\n"


def test_unused_noqa_is_style_in_sarif_not_performance(project, capsys):
    (project / "a.py").write_text("h = 1  # noqa: REM999\n")
    cli.main(["--no-cache", "--extend-select", "REM100", "--output-format", "sarif", "a.py"])
    rules = json.loads(capsys.readouterr().out)["runs"][0]["tool"]["driver"]["rules"]
    assert [(r["id"], r["properties"]["tags"][-1]) for r in rules] == [("REM100", "style")]


def test_unused_noqa_keeps_a_directive_for_a_finding_the_project_reports_at_the_call(project, capsys):
    # REM012 goes on the call in stack.py only in the project phase, from layers.py's wrap: the
    # directive there is used although no finding of the file's own rules is on its line.
    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "xmod_calls"
    # The fixture's own files only: the flake8 runs over the fixtures leave a cache folder in it.
    for path in [fixture / "pyproject.toml", *fixture.rglob("*.py")]:
        target = project / path.relative_to(fixture)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text(encoding="utf-8").replace("  # expect: REM012", "  # noqa: REM012"))
    for args in ((".",), ("mypkg/stack.py",)):
        _, found = findings(capsys, "--no-cache", "--extend-select", "REM100", *args)
        assert [(row, code) for row, _, code, _ in found if code in ("REM012", "REM100")] == [], args
