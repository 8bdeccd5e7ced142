"""What the CLI prints around the findings, against literal text and in-process (so that a mutation
run sees cli.py): ruff's summary lines, --statistics, -o/--extra-output, --show-settings,
--show-files, --add-noqa, --color, option errors, and the --help of both commands (a snapshot:
`UPDATE_SNAPSHOTS=1 python -m pytest -q tests/cli/test_cli_output.py` rewrites it after a deliberate
change; review `git diff tests/cli/snapshots/cli_help.txt`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from remat_lint import __version__
from remat_lint.cli import command as cli

SAFE = "import jax\ng = jax.checkpoint(lambda x: x, policy='dots_saveable')\n"
UNSAFE = "import jax\ndef f(x, training):\n    return x\ng = jax.checkpoint(f, static_argnames=('training',))\n"
CLEAN = "import jax\ng = jax.checkpoint(lambda x: x)\n"
HELP = Path(__file__).resolve().parent / "snapshots" / "cli_help.txt"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, text in {"safe.py": SAFE, "unsafe.py": UNSAFE, "clean.py": CLEAN}.items():
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    return tmp_path


def main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["--no-cache", "-j", "1", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("files", "summary"),
    [
        (["clean.py"], "All checks passed!\n"),
        (["safe.py"], "Found 1 error.\n[*] 1 fixable with the `--fix` option.\n"),
        (
            ["unsafe.py"],
            "Found 1 error.\nNo fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option).\n",
        ),
        (
            ["safe.py", "unsafe.py"],
            "Found 2 errors.\n[*] 1 fixable with the `--fix` option (1 hidden fix can be enabled with the `--unsafe-fixes` option).\n",
        ),
    ],
)
def test_summary_lines_are_ruffs(project, capsys, files, summary):
    assert main(capsys, "--output-format", "concise", *files)[2] == summary
    assert main(capsys, "-q", "--output-format", "concise", *files)[2] == ""


def test_summary_after_fixing(project, capsys):
    (project / "twice.py").write_text(SAFE + UNSAFE.replace("import jax\n", ""))
    code, _, err = main(capsys, "--fix", "twice.py")
    assert code == 1
    assert err == (
        "Found 2 errors (1 fixed, 1 remaining).\n"
        "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option).\n"
    )


def test_statistics(project, capsys):
    code, out, _ = main(capsys, "--statistics", "safe.py", "unsafe.py", "clean.py")
    assert code == 1
    assert out == "1\tREM001\t[*] policy-not-callable\n1\tREM010\t[ ] ignored-static-argnames\n"
    assert main(capsys, "--statistics", "--unsafe-fixes", "unsafe.py")[1] == "1\tREM010\t[*] ignored-static-argnames\n"


def test_output_file_and_extra_outputs(project, capsys):
    code, out, _ = main(
        capsys,
        "--output-format",
        "json",
        "-o",
        "report.json",
        "--extra-output",
        "sarif=r.sarif",
        "--extra-output",
        "concise=r.txt",
        "safe.py",
    )
    assert code == 1 and out == ""
    assert [f["code"] for f in json.loads((project / "report.json").read_text())] == ["REM001"]
    assert json.loads((project / "r.sarif").read_text())["runs"][0]["results"][0]["ruleId"] == "REM001"
    assert (project / "r.txt").read_text().startswith("safe.py:2:5: REM001 ")


def test_an_output_file_that_cannot_be_written_is_a_usage_error(project, capsys):
    code, _, err = main(capsys, "-o", "no/such/dir/report.txt", "safe.py")
    assert code == 2 and err.startswith("remat-lint: error: cannot write no/such/dir/report.txt: ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--extra-output", "xml=a"],
            "expected FORMAT=PATH with FORMAT one of full, concise, json, json-lines, github, sarif, "
            "gitlab, junit, pylint, rdjson, azure, grouped, got 'xml=a'",
        ),
        (["--extra-output", "sarif"], "expected FORMAT=PATH"),
        (["--extra-output", "sarif="], "expected FORMAT=PATH"),
        (["--target-jax-version", "bogus"], "'bogus' is not a version"),
        (["-j", "two"], "expected a positive integer, got 'two'"),
    ],
)
def test_option_values_are_checked(project, capsys, args, message):
    code, _, err = main(capsys, *args, "safe.py")
    assert code == 2 and message in err


def test_show_settings(project, capsys):
    (project / "pyproject.toml").write_text(
        '[tool.remat-lint]\nper-file-ignores = {"gen_*.py" = ["REM001"]}\ncache-dir = "build/cache"\n'
    )
    code, out, _ = main(capsys, "--show-settings", "safe.py")
    rows = {line[:19].strip(): line[19:] for line in out.splitlines()}  # a name column 19 wide, then the value
    assert code == 0
    assert rows["path"] == "safe.py" and rows["config file"] == str(project / "pyproject.toml")
    assert "REM001" in rows["enabled"].split(", ") and "REM302" not in rows["enabled"].split(", ")
    assert rows["per-file-ignores"] == "gen_*.py = ['REM001']" and rows["cache-dir"] == "build/cache"
    assert rows["test-paths"].startswith("tests/, ")
    assert rows["target-jax-version"].endswith(")")


def test_show_files(project, capsys):
    (project / "build").mkdir()
    (project / "build" / "x.py").write_text(SAFE)
    assert main(capsys, "--show-files", ".")[:2] == (0, "clean.py\nsafe.py\nunsafe.py\n")


def test_add_noqa(project, capsys):
    code, _, err = main(capsys, "--add-noqa", "safe.py", "unsafe.py", "clean.py")
    assert code == 0 and err.endswith("Added 2 noqa directives.\n")
    assert (project / "safe.py").read_text() == SAFE.replace("'dots_saveable')\n", "'dots_saveable')  # noqa: REM001\n")
    assert main(capsys, "safe.py", "unsafe.py")[0] == 0
    assert main(capsys, "--add-noqa", "clean.py")[2].endswith("Added 0 noqa directives.\n")


def test_colour(project, capsys, monkeypatch):
    coloured = main(capsys, "--color", "always", "--output-format", "concise", "safe.py")[1]
    assert coloured.startswith(
        "\x1b[1msafe.py\x1b[0m\x1b[36m:\x1b[0m2\x1b[36m:\x1b[0m5\x1b[36m:\x1b[0m \x1b[1;31mREM001\x1b[0m "
    )
    plain = main(capsys, "--color", "never", "--output-format", "concise", "safe.py")[1]
    assert plain.startswith("safe.py:2:5: REM001 ") and "\x1b[" not in plain
    assert (
        "\x1b[" not in main(capsys, "--output-format", "concise", "safe.py")[1]
    )  # auto: captured output is no terminal
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b[" in main(capsys, "--output-format", "concise", "safe.py")[1]
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in main(capsys, "--output-format", "concise", "safe.py")[1]


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out == f"remat-lint {__version__}\n"


def help_text(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COLUMNS", "100")  # argparse wraps to the terminal width
    texts = []
    for argv in (["--help"], ["rule", "--help"]):
        with pytest.raises(SystemExit):
            cli.main(argv)
        texts.append(f"$ remat-lint {' '.join(argv)}\n{capsys.readouterr().out}")
    return "\n".join(texts)


def test_help_matches_snapshot(capsys, monkeypatch):
    text = help_text(capsys, monkeypatch)
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        HELP.write_text(text)
    assert text == HELP.read_text(), (
        "after a deliberate change: UPDATE_SNAPSHOTS=1 python -m pytest -q tests/cli/test_cli_output.py"
    )
