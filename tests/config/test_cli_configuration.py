"""Configuration as a user meets it through the command line (issue 27): bad values stop the run
with the file, the key and what was expected; discovery, stdin and settings follow ruff."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import pytest

from remat_lint.cli import command as cli

BAD = "import jax\ng = jax.checkpoint(lambda x: x, policy='dots_saveable')\n"  # REM001 on line 2


def lint(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["--no-cache", *args])
    out, err = capsys.readouterr()
    return code, out, err


def codes(capsys: pytest.CaptureFixture[str], *args: str) -> list[tuple[str, str]]:
    code, out, err = lint(capsys, "--output-format", "json", *args)
    assert code in (0, 1), err
    return sorted((Path(f["filename"]).as_posix(), f["code"]) for f in json.loads(out))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(BAD)
    return tmp_path


# --- every table is checked when it is read ----------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        (
            '[tool.remat-lint.trace]\ntimeout = "x"\n',
            "[tool.remat-lint.trace] timeout must be a positive number of seconds, got 'x'",
        ),
        (
            '[tool.remat-lint.trace]\nmemory-limit-mb = "big"\n',
            "[tool.remat-lint.trace] memory-limit-mb must be a positive whole number of megabytes, got 'big'",
        ),
        ("[tool.remat-lint.trace]\ntimeot = 5\n", "unknown key 'timeot' in [tool.remat-lint.trace]"),
        (
            '[tool.remat-lint.trace]\nbackend = "cuda"\n',
            "[tool.remat-lint.trace] backend must be one of cpu, gpu, tpu, got 'cuda'",
        ),
        ("[tool.remat-lint.trace]\nrun = 3\n", "[tool.remat-lint.trace] run must be a command line (a string), got 3"),
        (
            '[[tool.remat-lint.trace.targets]]\nfunction = "m:f"\nargz = []\n',
            "[[tool.remat-lint.trace.targets]] #1: unknown keys ['argz']",
        ),
        (
            '[[tool.remat-lint.trace.targets]]\nfunction = "m:f"\nargs = 3\n',
            "[[tool.remat-lint.trace.targets]] #1: `args` and `init_args` must be lists",
        ),
        ('[[tool.remat-lint.trace.targets]]\nfunction = "m:f"\nargs = ["f32[8,"]\n', "not a shape string: 'f32[8,'"),
        (
            '[tool.remat-lint.per-file-ignores]\n"a.py" = "REM001"\n',
            "per-file-ignores must map globs to lists of codes: 'a.py' = 'REM001'",
        ),
        (
            '[tool.remat-lint.per-file-ignores]\n"a.py" = ["REM999"]\n',
            "per-file-ignores 'a.py': unknown rule selector 'REM999'",
        ),
    ],
)
def test_a_bad_value_in_any_table_exits_2_naming_the_file_the_key_and_what_was_expected(
    project, capsys, table, expected
):
    (project / "pyproject.toml").write_text(table)
    code, out, err = lint(capsys, ".")  # without --trace: configuration is checked when it is read
    assert (code, out) == (2, "")
    assert err.startswith(f"remat-lint: configuration error: {project / 'pyproject.toml'}: ")
    assert expected in err and "Traceback" not in err


def test_a_well_formed_trace_table_is_accepted(project, capsys):
    (project / "pyproject.toml").write_text(
        '[tool.remat-lint.trace]\ntimeout = 2.5\nmemory-limit-mb = 512\nbackend = "cpu"\nrun = "pytest"\n'
        '[[tool.remat-lint.trace.targets]]\nfunction = "pkg.mod:f"\nargs = ["f32[8,8]"]\nargnums = [0]\n'
    )
    assert codes(capsys, ".") == [("a.py", "REM001")]


# --- stdin under --force-exclude, and nothing to lint ----------------------------------------------


@pytest.fixture
def excluded_stdin(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (project / "pyproject.toml").write_text('[tool.remat-lint]\nextend-exclude = ["third"]\n')
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(BAD.encode())))
    return project


def test_force_exclude_applies_to_the_name_given_to_stdin(excluded_stdin, capsys):
    code, out, err = lint(capsys, "-", "--stdin-filename", "third/c.py", "--force-exclude")
    assert (code, out, err) == (0, "", "All checks passed!\n")


def test_force_exclude_on_stdin_under_fix_echoes_the_source_unchanged(excluded_stdin, capsys):
    code, out, _ = lint(capsys, "--fix", "-", "--stdin-filename", "third/c.py", "--force-exclude")
    assert (code, out) == (0, BAD)


def test_stdin_named_as_an_excluded_file_is_linted_without_force_exclude(excluded_stdin, capsys):
    code, out, _ = lint(capsys, "--output-format", "concise", "-", "--stdin-filename", "third/c.py")
    assert code == 1 and out.startswith("third/c.py:2:5: REM001")


def test_a_folder_without_python_files_warns_as_ruff_does(project, capsys):
    (project / "empty").mkdir()
    code, out, err = lint(capsys, "empty")
    assert (code, out) == (0, "")
    assert err == "remat-lint: warning: No Python files found under the given path(s)\nAll checks passed!\n"
    assert "No Python files" not in lint(capsys, ".")[2]


def test_the_project_passes_its_own_linter_with_its_own_configuration(monkeypatch, capsys):
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    code, out, err = lint(capsys, "--output-format", "concise")
    assert (code, out, err) == (0, "", "All checks passed!\n")


# --- --trace A B: each file with its own configuration ---------------------------------------------


def test_trace_gives_each_file_the_trace_table_of_its_own_configuration(project, monkeypatch, capsys):
    from remat_lint.trace.driver import dispatch as driver

    for folder, timeout in (("demo", 7), ("other", 9)):
        (project / folder).mkdir()
        (project / folder / "pyproject.toml").write_text(
            f'[tool.remat-lint.trace]\ntimeout = {timeout}\n[[tool.remat-lint.trace.targets]]\nfunction = "{folder}:f"\n'
        )
        (project / folder / f"{folder}.py").write_text(BAD)
    calls = []

    def stand_in(findings, files, settings, options):
        calls.append(([f.path for f in findings], files, settings.trace["targets"], options.timeout))
        return driver.TraceOutcome(warnings=[f"traced {files}"])

    monkeypatch.setattr(driver, "trace", stand_in)
    code, _, err = lint(capsys, "--trace", "demo/demo.py", "other/other.py")
    assert code == 1
    assert calls == [
        (["demo/demo.py"], ["demo/demo.py"], [{"function": "demo:f"}], 7.0),
        (["other/other.py"], ["other/other.py"], [{"function": "other:f"}], 9.0),
    ]
    assert "traced ['demo/demo.py']" in err and "traced ['other/other.py']" in err


# --- a nested configuration chooses rules; the project stays the outer one's --------------------------

TYPO = 'import jax\ng = jax.checkpoint(lambda x: x, policy=jax.checkpoint_policies.save_only_these_names("atn_out"))\n'


@pytest.fixture
def nested(project: Path) -> Path:
    (project / "pyproject.toml").write_text('[tool.remat-lint]\ntarget-jax-version = "0.4.30"\n')
    (project / "pkg" / "sub").mkdir(parents=True)
    (project / "pkg" / "names.py").write_text(
        'from jax.ad_checkpoint import checkpoint_name\ndef f(x):\n    return checkpoint_name(x, "attn_out")\n'
    )
    (project / "pkg" / "sub" / "uses.py").write_text(TYPO)
    return project


def settings_rows(capsys: pytest.CaptureFixture[str], path: str) -> dict[str, str]:
    code, out, _ = lint(capsys, "--show-settings", path)
    assert code == 0
    return {line[:19].strip(): line[19:] for line in out.splitlines()}


@pytest.mark.parametrize("extend", ["", 'extend = "../../pyproject.toml"\n'])
def test_a_nested_configuration_that_only_chooses_rules_keeps_the_project_and_its_jax_target(nested, capsys, extend):
    (nested / "pkg" / "sub" / "pyproject.toml").write_text(f'[tool.remat-lint]\n{extend}ignore = ["REM001"]\n')
    rows = settings_rows(capsys, "pkg/sub/uses.py")
    assert rows["config file"] == str(nested / "pkg" / "sub" / "pyproject.toml")
    assert rows["project root"] == str(nested)
    assert rows["target-jax-version"] == f"0.4.30 ({nested / 'pyproject.toml'})"
    assert "REM001" not in rows["enabled"]
    # the name declared in pkg/names.py is seen: the typo in pkg/sub/uses.py is reported, linted alone or not
    assert codes(capsys, "pkg/sub/uses.py") == [("pkg/sub/uses.py", "REM008")]
    assert codes(capsys, ".") == [("a.py", "REM001"), ("pkg/sub/uses.py", "REM008")]


def test_a_nested_configuration_the_outer_one_excludes_is_a_project_of_its_own(nested, capsys):
    (nested / "pyproject.toml").write_text('[tool.remat-lint]\nextend-exclude = ["pkg"]\n')
    (nested / "pkg" / "sub" / "pyproject.toml").write_text("[tool.remat-lint]\n")  # a fixture project, say
    assert settings_rows(capsys, "pkg/sub/uses.py")["project root"] == str(nested / "pkg" / "sub")
    assert codes(capsys, "pkg/sub/uses.py") == []


def test_a_nested_package_of_its_own_is_its_own_project(nested, capsys):
    (nested / "pkg" / "sub" / "pyproject.toml").write_text(
        '[project]\nname = "sub"\ndependencies = ["jax==0.4.35"]\n[tool.remat-lint]\nignore = ["REM001"]\n'
    )
    rows = settings_rows(capsys, "pkg/sub")
    assert rows["project root"] == str(nested / "pkg" / "sub")
    assert rows["target-jax-version"] == f"0.4.35 ({nested / 'pkg' / 'sub' / 'pyproject.toml'})"
    assert codes(capsys, "pkg/sub/uses.py") == []  # no file of its own declares a name


# --- .gitignore, .ignore and .git/info/exclude -----------------------------------------------------


@pytest.fixture
def checkout(project: Path) -> Path:
    """A git checkout (a .git folder is what marks one) with ignored files, ruff's cases."""
    (project / ".git" / "info").mkdir(parents=True)
    for path in ("gen/out.py", "sub/deep/c.py", "sub/d.py", "sub/keep.py", "logs/x.py"):
        (project / path).parent.mkdir(parents=True, exist_ok=True)
        (project / path).write_text(BAD)
    (project / ".gitignore").write_text("gen/\nsub/*.py\n!sub/keep.py\n")
    (project / "sub" / ".ignore").write_text("deep\n")
    (project / ".git" / "info" / "exclude").write_text("logs\n")
    return project


def shown(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    code, out, err = lint(capsys, "--show-files", *args)
    assert code == 0, err
    return out.splitlines()


def test_ignored_files_are_not_linted_as_ruff_skips_them(checkout, capsys):
    assert shown(capsys) == ["a.py", "sub/keep.py"]  # a nested .gitignore pattern, a negation, .ignore, info/exclude
    assert codes(capsys, ".") == [("a.py", "REM001"), ("sub/keep.py", "REM001")]


def test_ignore_files_apply_from_a_subfolder_too(checkout, capsys, monkeypatch):
    monkeypatch.chdir(checkout / "sub")
    assert shown(capsys) == ["keep.py"]


def test_gitignore_applies_only_in_a_git_checkout_and_ignore_everywhere(checkout, capsys):
    (checkout / ".git" / "info" / "exclude").unlink()
    (checkout / ".git" / "info").rmdir()
    (checkout / ".git").rmdir()
    assert shown(capsys) == ["a.py", "gen/out.py", "logs/x.py", "sub/d.py", "sub/keep.py"]


def test_paths_named_on_the_command_line_are_linted_even_if_ignored(checkout, capsys):
    # ruff 0.17.6 lints them, with --force-exclude too (it applies `exclude`, not ignore files)
    assert shown(capsys, "gen", "sub/d.py") == ["gen/out.py", "sub/d.py"]
    assert shown(capsys, "--force-exclude", "sub/d.py") == ["sub/d.py"]


@pytest.mark.parametrize("how", [("--no-respect-gitignore",), ("--config", "respect-gitignore = false")])
def test_respect_gitignore_can_be_turned_off(checkout, capsys, how):
    everything = ["a.py", "gen/out.py", "logs/x.py", "sub/d.py", "sub/deep/c.py", "sub/keep.py"]
    assert shown(capsys, *how) == everything
    (checkout / "pyproject.toml").write_text("[tool.remat-lint]\nrespect-gitignore = false\n")
    assert shown(capsys) == everything
    assert settings_rows(capsys, "a.py")["respect-gitignore"] == "false"
    assert shown(capsys, "--respect-gitignore") == ["a.py", "sub/keep.py"]


def test_ignore_wins_over_gitignore_in_the_same_folder_and_a_deeper_file_over_both(checkout, capsys):
    (checkout / ".ignore").write_text("!gen/\n")
    (checkout / "gen" / ".gitignore").write_text("out.py\n")
    (checkout / "gen" / "kept.py").write_text(BAD)
    assert shown(capsys) == ["a.py", "gen/kept.py", "sub/keep.py"]


def test_a_linked_worktree_reads_the_exclude_file_of_the_repository_it_shares(tmp_path, monkeypatch, capsys):
    git = ["git", "-c", "user.email=a@b", "-c", "user.name=n", "-C"]
    main = tmp_path / "main"
    subprocess.run(["git", "init", "-q", str(main)], check=True)
    (main / "a.py").write_text(BAD)
    subprocess.run([*git, str(main), "add", "a.py"], check=True)
    subprocess.run([*git, str(main), "commit", "-qm", "a"], check=True)
    subprocess.run([*git, str(main), "worktree", "add", "-q", str(tmp_path / "linked")], check=True)
    (main / ".git" / "info" / "exclude").write_text("local.py\n")
    (tmp_path / "linked" / "local.py").write_text(BAD)
    monkeypatch.chdir(tmp_path / "linked")
    assert shown(capsys) == ["a.py"]


def test_an_unreadable_ignore_line_is_skipped_not_fatal(checkout, capsys):
    (checkout / ".gitignore").write_text("!\n\\\ngen/\n")
    assert "gen/out.py" not in shown(capsys)


# --- fixes: fix = true, --no-fix, --fix-only, --show-fixes -----------------------------------------

FIXED = "import jax\ng = jax.checkpoint(lambda x: x, policy=jax.checkpoint_policies.dots_saveable)\n"


def test_fix_true_in_configuration_fixes_and_no_fix_overrides_it(project, capsys):
    (project / "pyproject.toml").write_text("[tool.remat-lint]\nfix = true\n")
    assert settings_rows(capsys, "a.py")["fix"] == "true"
    assert lint(capsys, "--no-fix", "a.py")[0] == 1 and (project / "a.py").read_text() == BAD
    code, _, err = lint(capsys, "a.py")
    assert code == 0 and (project / "a.py").read_text() == FIXED
    assert err == "Found 1 error (1 fixed, 0 remaining).\n"


def test_fix_only_fixes_and_reports_nothing_else(project, capsys):
    (project / "b.py").write_text(
        "import jax\njax.checkpoint(f, static_argnums=0.5)\n" + BAD
    )  # a finding without a fix
    code, out, err = lint(capsys, "--fix-only", ".")
    assert (code, out, err) == (0, "", "Fixed 2 errors.\n")
    assert (project / "a.py").read_text() == FIXED
    code, out, err = lint(capsys, "--fix-only", ".")  # nothing left to fix: silent, like ruff
    assert (code, out, err) == (0, "", "")


def test_fix_only_exits_1_with_exit_non_zero_on_fix_when_it_fixed_something(project, capsys):
    assert lint(capsys, "--fix-only", "--exit-non-zero-on-fix", "a.py")[0] == 1
    assert lint(capsys, "--fix-only", "--exit-non-zero-on-fix", "a.py")[0] == 0


def test_show_fixes_lists_the_fixes_applied_per_file_and_rule(project, capsys):
    (project / "b.py").write_text(BAD + BAD.replace("g =", "h ="))
    code, _, err = lint(capsys, "--fix", "--show-fixes", ".")
    assert code == 0
    assert err == (
        "Fixed 3 errors:\n- a.py:\n    1 × REM001 (policy-not-callable)\n- b.py:\n    2 × REM001 (policy-not-callable)\n\n"
        "Found 3 errors (3 fixed, 0 remaining).\n"
    )


def test_show_fixes_without_fix_lists_the_fixes_available(project, capsys):
    code, _, err = lint(capsys, "--show-fixes", "--output-format", "concise", "a.py")
    assert code == 1 and (project / "a.py").read_text() == BAD
    assert err.startswith(
        "1 fixable with the `--fix` option:\n- a.py:\n    1 × REM001 (policy-not-callable)\n\nFound 1 error."
    )


# --- the command line's configuration keys --------------------------------------------------------


@pytest.fixture
def layout(project: Path) -> Path:
    (project / "pyproject.toml").write_text('[tool.remat-lint]\nextend-exclude = ["gen"]\n')
    for path in ("gen/g.py", "tests/test_t.py", "b.py"):
        (project / path).parent.mkdir(exist_ok=True)
        (project / path).write_text(BAD)
    return project


def test_inline_config_overrides_win_over_the_configuration_file(layout, capsys):
    assert codes(capsys, "--config", 'ignore = ["REM001"]') == []
    assert codes(capsys, "--config", 'extend-exclude = ["b.py"]', "--config", 'select = ["REM001"]') == [
        ("a.py", "REM001"),
        ("tests/test_t.py", "REM001"),
    ]  # extend-exclude adds to the file's (gen stays excluded); fragments are repeatable


def test_inline_config_combines_with_a_config_file(layout, capsys):
    (layout / "other.toml").write_text('[tool.remat-lint]\nexclude = ["tests"]\n')
    assert codes(capsys, "--config", "other.toml", "--config", 'per-file-ignores = {"b.py" = ["REM001"]}') == [
        ("a.py", "REM001"),
        ("gen/g.py", "REM001"),
    ]


@pytest.mark.parametrize(
    ("fragment", "expected"),
    [
        ('ignor = ["REM001"]', "--config 'ignor = [\"REM001\"]': unknown key 'ignor'"),
        ("fix = 1", "fix must be true or false, got 1"),
        ("trace.timeout = 'x'", "[tool.remat-lint.trace] timeout must be a positive number of seconds"),
        ("nosuch.toml", "config file nosuch.toml not found"),
        ("select = ", "is neither a file nor a TOML `key = value` pair"),
    ],
)
def test_a_bad_inline_config_exits_2_naming_it(layout, capsys, fragment, expected):
    code, out, err = lint(capsys, "--config", fragment)
    assert (code, out) == (2, "") and expected in err


def test_exclude_and_extend_exclude_on_the_command_line(layout, capsys):
    assert shown(capsys, "--extend-exclude", "b.py,tests") == ["a.py"]
    (layout / "build").mkdir()
    (layout / "build" / "x.py").write_text(BAD)
    # --exclude replaces `exclude` (its defaults, such as build, too); the file's extend-exclude stays
    assert shown(capsys, "--exclude", "b.py") == ["a.py", "build/x.py", "tests/test_t.py"]


def test_per_file_ignores_on_the_command_line_and_their_extension(layout, capsys):
    (layout / "pyproject.toml").write_text(
        '[tool.remat-lint]\nextend-exclude = ["gen"]\nper-file-ignores = {"b.py" = ["REM001"]}\n'
    )
    assert codes(capsys) == [("a.py", "REM001"), ("tests/test_t.py", "REM001")]
    assert codes(capsys, "--per-file-ignores", "a.py:REM001") == [("b.py", "REM001"), ("tests/test_t.py", "REM001")]
    assert codes(capsys, "--extend-per-file-ignores", "tests/*:REM0", "--extend-per-file-ignores", "a.py:REM001") == []


def test_extend_per_file_ignores_in_configuration_adds_to_the_extended_files(layout, capsys):
    (layout / "base.toml").write_text('[tool.remat-lint]\nper-file-ignores = {"b.py" = ["REM001"]}\n')
    (layout / "pyproject.toml").write_text(
        '[tool.remat-lint]\nextend = "base.toml"\nextend-exclude = ["gen"]\nextend-per-file-ignores = {"a.py" = ["REM001"]}\n'
    )
    assert codes(capsys) == [("tests/test_t.py", "REM001")]
