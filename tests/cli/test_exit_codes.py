"""Exit codes for every flag combination that changes them (ruff's conventions), and what each
combination writes: 0 nothing left to report, 1 findings (or, with --diff, fixes to apply), 2 usage,
configuration or internal error. Run in-process so a mutation run sees the code under test."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from remat_lint.cli import command as cli

# A safe fix (REM001), an unsafe-only fix (REM010), no fix at all (REM007), nothing to report.
SAFE = "import jax\ng = jax.checkpoint(lambda x: x, policy='dots_saveable')\n"
SAFE_FIXED = "import jax\ng = jax.checkpoint(lambda x: x, policy=jax.checkpoint_policies.dots_saveable)\n"
UNSAFE = "import jax\ndef f(x, training):\n    return x\ng = jax.checkpoint(f, static_argnames=('training',))\n"
UNSAFE_FIXED = "import jax\ndef f(x, training):\n    return x\ng = jax.checkpoint(f, static_argnums=(1,))\n"
NO_FIX = "import jax\ndef f(x):\n    return x\njax.checkpoint(f)\n"
CLEAN = "import jax\ng = jax.checkpoint(lambda x: x)\n"
FILES = {
    "safe.py": SAFE,
    "unsafe.py": UNSAFE,
    "nofix.py": NO_FIX,
    "clean.py": CLEAN,
    "broken.py": "import jax\njax.checkpoint(f\n",
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def main(*args: str) -> int:
    return cli.main(["--no-cache", "-j", "1", *args])


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["clean.py"], 0),
        (["safe.py"], 1),
        (["safe.py", "--exit-zero"], 0),
        (["safe.py", "--statistics"], 1),
        (["safe.py", "--statistics", "--exit-zero"], 0),
        (["safe.py", "--output-format", "json"], 1),
        (["safe.py", "--output-format", "sarif", "--exit-zero"], 0),
        (["broken.py"], 1),  # a syntax error is a finding (REM000), not a crash
        (["broken.py", "--exit-zero"], 0),
        (["missing.py"], 1),  # a path that does not exist: REM000
        (["safe.py", "--ignore", "REM001"], 0),
    ],
)
def test_lint_exit_codes(project, args, code):
    assert main(*args) == code


@pytest.mark.parametrize(
    ("args", "code", "prints_diff"),
    [
        (["--diff", "safe.py"], 1, True),
        (["--diff", "--exit-zero", "safe.py"], 0, True),  # CI asked not to fail: still shows the diff
        (["--diff", "clean.py"], 0, False),
        (["--diff", "nofix.py"], 0, False),  # --diff implies fix-only (ruff): unfixable findings do not count
        (["--diff", "unsafe.py"], 0, False),  # the only fix is unsafe
        (["--diff", "--unsafe-fixes", "unsafe.py"], 1, True),
    ],
)
def test_diff_exit_codes_and_nothing_is_written(project, capsys, args, code, prints_diff):
    assert main(*args) == code
    assert ("+++ b/" in capsys.readouterr().out) is prints_diff
    assert all((project / name).read_text() == text for name, text in FILES.items())


@pytest.mark.parametrize(
    ("args", "code", "after"),
    [
        (["--fix", "safe.py"], 0, SAFE_FIXED),  # everything fixed: nothing left to report
        (["--fix", "--exit-non-zero-on-fix", "safe.py"], 1, SAFE_FIXED),
        (["--fix", "--exit-non-zero-on-fix", "--exit-zero", "safe.py"], 0, SAFE_FIXED),
        (["--fix", "unsafe.py"], 1, UNSAFE),  # an unsafe fix needs --unsafe-fixes: the finding remains
        (["--fix", "--unsafe-fixes", "unsafe.py"], 0, UNSAFE_FIXED),
        (["--fix", "nofix.py"], 1, NO_FIX),
        (["--fix", "--exit-zero", "nofix.py"], 0, NO_FIX),
        (["--fix", "--exit-non-zero-on-fix", "clean.py"], 0, CLEAN),
    ],
)
def test_fix_exit_codes_and_written_files(project, args, code, after):
    assert main(*args) == code
    assert (project / args[-1]).read_text() == after


def test_fix_of_one_file_with_a_remaining_finding_elsewhere(project):
    assert main("--fix", "safe.py", "nofix.py") == 1
    assert (project / "safe.py").read_text() == SAFE_FIXED


def stdin(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text.encode())))


def test_stdin_exit_codes(project, monkeypatch, capsys):
    stdin(monkeypatch, SAFE)
    assert main("-") == 1
    stdin(monkeypatch, SAFE)
    assert main("--exit-zero", "-") == 0
    stdin(monkeypatch, CLEAN)
    assert main("-") == 0
    capsys.readouterr()
    stdin(monkeypatch, SAFE)
    assert main("--fix", "-") == 0  # the fixed source goes to stdout, nothing remains
    assert capsys.readouterr().out == SAFE_FIXED
    stdin(monkeypatch, SAFE)
    assert main("--diff", "-") == 1


@pytest.mark.parametrize(
    ("args", "stderr"),
    [
        (["--bogus-option"], "unrecognized arguments: --bogus-option"),
        (["--select", "XYZ123", "safe.py"], "XYZ123"),
        (["--output-format", "xml", "safe.py"], "invalid choice: 'xml'"),
        (["-", "safe.py"], "'-' (stdin) cannot be combined with other paths"),
        (["--trace", "--fix", "safe.py"], "--trace cannot be combined with --fix or --diff"),
        (["--trace", "--diff", "safe.py"], "--trace cannot be combined with --fix or --diff"),
        (["--config", "nowhere.toml", "safe.py"], "nowhere.toml"),
        (["-j", "0", "safe.py"], "--jobs"),
        (["rule"], "give a rule code"),
        (["rule", "REM999"], "unknown rule 'REM999'"),
    ],
)
def test_usage_errors_exit_2_and_say_why(project, capsys, args, stderr):
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("remat-lint: ") and stderr in err


def test_configuration_error_exits_2_even_with_exit_zero(project, capsys):
    (project / "pyproject.toml").write_text('[tool.remat-lint]\nselect = "REM001"\n')
    assert main("--exit-zero", "safe.py") == 2
    assert "select" in capsys.readouterr().err


def test_internal_error_exits_2_never_clean(project, monkeypatch, capsys):
    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(cli, "run", crash)
    assert main("--exit-zero", "safe.py") == 2
    err = capsys.readouterr().err
    assert "internal error, please report it" in err and "RuntimeError: boom" in err


def test_check_subcommand_is_the_default_command(project):
    assert cli.main(["check", "--no-cache", "safe.py"]) == 1
    assert cli.main(["check", "--no-cache", "clean.py"]) == 0
