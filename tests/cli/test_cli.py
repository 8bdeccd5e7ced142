"""The CLI as a user meets it: exit codes, selection, config, noqa, stdin, output formats."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BAD = "import jax\ng = jax.checkpoint(lambda x: x, policy='dots_saveable')\n"
CLEAN = "import jax\ng = jax.checkpoint(lambda x: x)\n"


def run(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "remat_lint", *args], cwd=cwd, input=stdin, capture_output=True, text=True
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "clean.py").write_text(CLEAN)
    return tmp_path


def test_exit_codes(project):
    assert run("clean.py", cwd=project).returncode == 0
    assert run("bad.py", cwd=project).returncode == 1
    assert run("--bogus-option", cwd=project).returncode == 2
    assert run("--select", "XYZ123", "bad.py", cwd=project).returncode == 2
    assert run("bad.py", "--exit-zero", cwd=project).returncode == 0


def test_concise_output_is_sorted_and_one_based(project):
    (project / "a.py").write_text(BAD)
    out = run("--output-format", "concise", ".", cwd=project).stdout.splitlines()
    assert out == [
        "a.py:2:5: REM001 `policy='dots_saveable'` is a string, not a policy",
        "bad.py:2:5: REM001 `policy='dots_saveable'` is a string, not a policy",
    ]


def test_full_output_shows_source_caret_and_fix(project):
    out = run("bad.py", cwd=project).stdout
    assert "2 | g = jax.checkpoint(lambda x: x, policy='dots_saveable')" in out
    assert "|     ^^^^^" in out
    assert "help: Use `jax.checkpoint_policies.dots_saveable`" in out


def test_json_shape_is_ruff_compatible(project):
    [item] = json.loads(run("--output-format", "json", "bad.py", cwd=project).stdout)
    assert item["code"] == "REM001" and item["name"] == "policy-not-callable" and item["severity"] == "error"
    assert item["filename"] == "bad.py"
    assert item["location"] == {"row": 2, "column": 5} and item["end_location"]["row"] == 2
    assert item["fix"]["applicability"] == "safe"
    assert item["fix"]["edits"][0]["content"] == "jax.checkpoint_policies.dots_saveable"
    assert item["trace"] is None and item["url"]
    lines = run("--output-format", "json-lines", "bad.py", cwd=project).stdout.splitlines()
    assert [json.loads(line)["code"] for line in lines] == ["REM001"]


def test_select_ignore_and_prefixes(project):
    assert run("--ignore", "REM001", "bad.py", cwd=project).returncode == 0
    assert run("--ignore", "REM", "bad.py", cwd=project).returncode == 0
    assert run("--ignore", "REM", "--select", "REM001", "bad.py", cwd=project).returncode == 1
    assert run("--select", "ALL", "--ignore", "REM0", "bad.py", cwd=project).returncode == 0
    assert run("--select", "REM002", "bad.py", cwd=project).returncode == 0
    assert run("--select", "REM002", "--extend-select", "REM001", "bad.py", cwd=project).returncode == 1


def test_pyproject_config_is_found_by_walking_up(project):
    (project / "pyproject.toml").write_text(
        '[tool.remat-lint]\nignore = ["REM001"]\nper-file-ignores = {"gen_*.py" = ["REM"]}\n'
    )
    sub = project / "pkg"
    sub.mkdir()
    (sub / "m.py").write_text(BAD)
    assert run("pkg", cwd=project).returncode == 0
    (project / "pyproject.toml").write_text('[tool.remat-lint]\nper-file-ignores = {"gen_*.py" = ["REM"]}\n')
    (sub / "gen_model.py").write_text(BAD)
    out = run("--output-format", "concise", "pkg", cwd=project).stdout
    assert "pkg/m.py:2:5: REM001" in out and "gen_model" not in out


def test_bad_config_is_a_usage_error(project):
    (project / "pyproject.toml").write_text('[tool.remat-lint]\nselect = "REM001"\n')
    proc = run("bad.py", cwd=project)
    assert proc.returncode == 2 and "select must be a list" in proc.stderr


def test_exclude_and_default_excludes(project):
    for d in (".venv", "build", "generated"):
        (project / d).mkdir()
        (project / d / "x.py").write_text(BAD)
    (project / "bad.py").write_text(CLEAN)
    (project / "pyproject.toml").write_text('[tool.remat-lint]\nextend-exclude = ["generated"]\n')
    assert run(".", cwd=project).returncode == 0
    # A path given explicitly is linted even when excluded (as in ruff).
    assert run("generated", cwd=project).returncode == 1


def test_noqa_blanket_and_codes(project):
    (project / "n.py").write_text(
        "import jax\n"
        "a = jax.checkpoint(f, policy='x')  # noqa\n"
        "b = jax.checkpoint(f, policy='x')  # NOQA:REM001\n"
        "c = jax.checkpoint(f, policy='x')  # noqa: REM002\n"
        "d = jax.checkpoint(f, policy='x')  # noqa: REM0\n"
    )
    out = run("--output-format", "concise", "n.py", cwd=project).stdout
    assert [line.split(":")[1] for line in out.splitlines()] == ["4"]


def test_noqa_on_multiline_statements_matches_flake8(project):
    # flake8 maps noqa per token line: a multi-line string carries it to every line it spans,
    # while bracketed continuation lines are separate (NL tokens). The CLI copies this exactly.
    source = (
        "import jax\n"
        "a = jax.checkpoint(  # noqa: REM001\n    f,\n    policy='x',\n)\n"
        "b = jax.checkpoint(\n    f,\n    policy='x',\n)  # noqa: REM001\n"
        'c = jax.checkpoint(f, policy="x", doc="""\nmulti-line\n""")  # noqa: REM001\n'
    )
    (project / "m.py").write_text(source)
    cli = run("--select", "REM001", "--output-format", "concise", "m.py", cwd=project).stdout
    flake8 = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select=REM001", "m.py"],
        cwd=project,
        capture_output=True,
        text=True,
    ).stdout
    assert [line.split(":")[1] for line in cli.splitlines()] == ["6"]
    assert [line.split(":")[:3] for line in flake8.splitlines()] == [line.split(":")[:3] for line in cli.splitlines()]


def test_noqa_codes_are_case_sensitive_as_in_flake8(project):
    # flake8 compares the codes as written: ``# NOQA: rem001`` suppresses nothing there, nor here.
    (project / "c.py").write_text("import jax\na = jax.checkpoint(f, policy='x')  # NOQA: rem001\n")
    cli = run("--select", "REM001", "--output-format", "concise", "c.py", cwd=project).stdout
    flake8 = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select=REM001", "c.py"],
        cwd=project,
        capture_output=True,
        text=True,
    ).stdout
    assert [line.split(":")[1] for line in cli.splitlines()] == ["2"]
    assert [line.split(":")[:3] for line in flake8.splitlines()] == [line.split(":")[:3] for line in cli.splitlines()]


def test_flake8_file_noqa_skips_the_file_as_flake8_does(project):
    bad = "import jax\na = jax.checkpoint(f, policy='x')\n"
    (project / "skipped.py").write_text("# flake8: noqa\n" + bad)
    (project / "kept.py").write_text(bad + "b = 1  # flake8: noqa\n")  # only at the start of a line
    for name, rows in (("skipped.py", []), ("kept.py", ["2"])):
        cli = run("--select", "REM001", "--output-format", "concise", name, cwd=project).stdout
        flake8 = subprocess.run(
            [sys.executable, "-m", "flake8", "--isolated", "--select=REM001", name],
            cwd=project,
            capture_output=True,
            text=True,
        ).stdout
        assert [line.split(":")[1] for line in cli.splitlines() if line.startswith(name)] == rows
        assert [line.split(":")[1] for line in flake8.splitlines()] == rows


def test_file_level_noqa(project):
    (project / "f.py").write_text("# remat-lint: noqa: REM001\n" + BAD)
    assert run("f.py", cwd=project).returncode == 0
    (project / "g.py").write_text("# remat-lint: noqa: REM002\n" + BAD)
    assert run("g.py", cwd=project).returncode == 1


def test_stdin_with_filename(project):
    proc = run("--output-format", "concise", "--stdin-filename", "pkg/model.py", "-", cwd=project, stdin=BAD)
    assert proc.returncode == 1 and proc.stdout.startswith("pkg/model.py:2:5: REM001")
    assert run("-", cwd=project, stdin=CLEAN).returncode == 0


def test_syntax_error_is_a_diagnostic_and_linting_goes_on(project):
    (project / "broken.py").write_text("def f(:\n    checkpoint\n")
    proc = run("--output-format", "concise", ".", cwd=project)
    assert proc.returncode == 1
    assert "broken.py:1:7: REM000 SyntaxError: invalid syntax" in proc.stdout
    assert "bad.py:2:5: REM001" in proc.stdout


def test_missing_path_is_reported(project):
    proc = run("--output-format", "concise", "nope.py", "bad.py", cwd=project)
    assert "nope.py:1:1: REM000" in proc.stdout and "bad.py:2:5: REM001" in proc.stdout


def test_rule_command_prints_docs():
    proc = subprocess.run([sys.executable, "-m", "remat_lint", "rule", "REM001"], capture_output=True, text=True)
    assert proc.returncode == 0
    assert "policy-not-callable (REM001)" in proc.stdout and "## Why is this bad?" in proc.stdout
    every = subprocess.run([sys.executable, "-m", "remat_lint", "rule", "--all"], capture_output=True, text=True)
    assert every.returncode == 0 and every.stdout.count("## What it does") >= 1
    assert subprocess.run([sys.executable, "-m", "remat_lint", "rule", "REM999"], capture_output=True).returncode == 2
    by_name = subprocess.run(
        [sys.executable, "-m", "remat_lint", "rule", "policy-not-callable"], capture_output=True, text=True
    )
    assert by_name.returncode == 0 and by_name.stdout == proc.stdout


def test_version():
    from remat_lint import __version__

    proc = subprocess.run([sys.executable, "-m", "remat_lint", "--version"], capture_output=True, text=True)
    assert proc.stdout.strip() == f"remat-lint {__version__}"


def test_output_file_and_extra_outputs_come_from_one_run(project):
    proc = run(
        "--output-format",
        "json",
        "--output-file",
        "out.json",
        "--extra-output",
        "sarif=out.sarif",
        "--extra-output",
        "concise=out.txt",
        "bad.py",
        cwd=project,
    )
    assert proc.returncode == 1 and proc.stdout == ""
    assert [f["code"] for f in json.loads((project / "out.json").read_text())] == ["REM001"]
    assert json.loads((project / "out.sarif").read_text())["runs"][0]["results"][0]["ruleId"] == "REM001"
    assert (project / "out.txt").read_text().startswith("bad.py:2:5: REM001 ")
    assert run("--extra-output", "xml=out.xml", "bad.py", cwd=project).returncode == 2
    assert run("--output-file", "missing-dir/out.txt", "bad.py", cwd=project).returncode == 2


@pytest.mark.parametrize(
    ("args", "env", "coloured"),
    [
        ((), {}, False),
        (("--color", "always"), {}, True),
        ((), {"FORCE_COLOR": "1"}, True),
        ((), {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
        (("--color", "never"), {"FORCE_COLOR": "1"}, False),
    ],
)
def test_colour_follows_color_no_color_and_force_color(project, monkeypatch, args, env, coloured):
    for name in ("NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    out = run("--output-format", "concise", *args, "bad.py", cwd=project).stdout  # a pipe, not a terminal
    assert ("\x1b[1;31mREM001\x1b[0m" in out) is coloured
    assert (
        out.replace("\x1b[1m", "")
        .replace("\x1b[36m", "")
        .replace("\x1b[1;31m", "")
        .replace("\x1b[0m", "")
        .startswith("bad.py:2:5: REM001 ")
    )


def test_cli_and_flake8_agree_on_a_latin1_file_without_coding_line(project):
    (project / "lat.py").write_bytes(b"import jax\n# caf\xe9\ng = jax.checkpoint(f, policy='dots_saveable')\n")
    cli = run("--output-format", "concise", "lat.py", cwd=project).stdout
    flake8 = subprocess.run(
        [sys.executable, "-m", "flake8", "--select=REM", "lat.py"], cwd=project, capture_output=True, text=True
    ).stdout
    assert cli.startswith("lat.py:1:1: REM000 cannot decode file: 'utf-8' codec can't decode byte 0xe9")
    assert flake8 == cli  # Python rejects the file; flake8's Latin-1 fallback does not hide that
