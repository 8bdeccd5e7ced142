"""Configuration as ruff resolves it: the nearest configuration above each file governs it, whatever
else is on the command line; `extend` inherits; a broken configuration is an error (exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BAD = "import jax\ng = jax.checkpoint(lambda x: x, policy='dots_saveable')\n"
DISCARDED = "import jax\njax.checkpoint(f)\n"  # REM007, quiet in test files


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "remat_lint", "--no-cache", *args], cwd=cwd, capture_output=True, text=True
    )


def found(*args: str, cwd: Path) -> list[tuple[str, str]]:
    proc = cli("--output-format", "json", *args, cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    return sorted((Path(f["filename"]).as_posix(), f["code"]) for f in json.loads(proc.stdout))


@pytest.fixture
def nested(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[tool.remat-lint]\nignore = ["REM001"]\n')
    (tmp_path / "top.py").write_text(BAD)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "pyproject.toml").write_text('[tool.remat-lint]\nselect = ["REM001"]\n')
    (tmp_path / "sub" / "inner.py").write_text(BAD)
    return tmp_path


def test_the_nearest_configuration_governs_each_file_whatever_the_batch(nested):
    expected = [("sub/inner.py", "REM001")]
    assert found(".", cwd=nested) == expected
    assert found("sub/inner.py", "top.py", cwd=nested) == expected
    assert found("top.py", "sub/inner.py", cwd=nested) == expected
    assert found("sub/inner.py", cwd=nested) == expected
    assert found("top.py", cwd=nested) == []
    assert found("../top.py", cwd=nested / "sub") == []  # the working directory does not matter either


def test_a_remat_lint_toml_is_a_configuration_too(nested):
    (nested / "sub" / "pyproject.toml").unlink()
    assert found(".", cwd=nested) == []
    (nested / "sub" / "remat-lint.toml").write_text('select = ["REM001"]\n')
    assert found(".", cwd=nested) == [("sub/inner.py", "REM001")]


def test_extend_inherits_and_the_extending_file_wins(nested):
    (nested / "pyproject.toml").write_text('[tool.remat-lint]\nignore = ["REM001"]\ntest-paths = ["checks/"]\n')
    (nested / "sub" / "pyproject.toml").write_text(
        '[tool.remat-lint]\nextend = "../pyproject.toml"\nextend-select = ["REM302"]\n'
    )
    (nested / "sub" / "alias.py").write_text("import jax\ng = jax.remat(lambda x: x)\n")
    (nested / "sub" / "checks").mkdir()
    (nested / "sub" / "checks" / "c.py").write_text(DISCARDED)
    (nested / "sub" / "d.py").write_text(DISCARDED)
    # REM001 still ignored (inherited), REM302 added, test-paths inherited (relative to sub/).
    assert found(".", cwd=nested) == [("sub/alias.py", "REM302"), ("sub/d.py", "REM007")]


def test_command_line_selection_applies_on_top_of_every_configuration(nested):
    assert found("--extend-select", "REM001", ".", cwd=nested) == [("sub/inner.py", "REM001"), ("top.py", "REM001")]
    assert found("--ignore", "REM001", ".", cwd=nested) == []


def test_config_option_governs_every_file(nested):
    assert found("--config", "sub/pyproject.toml", ".", cwd=nested) == [
        ("sub/inner.py", "REM001"),
        ("top.py", "REM001"),
    ]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('[tool.remat-lint\nignore = ["REM001"]\n', "is not valid TOML"),
        ('[tool.remat-lint]\nignore = "REM001"\n', "ignore must be a list of strings"),
        ('[tool.remat-lint]\nselect = ["REM999"]\n', "unknown rule selector 'REM999'"),
        ('[tool.remat-lint]\nselect = [""]\n', "empty rule selector"),
        ('[tool.remat-lint]\nper-file-ignores = {"a.py" = "REM001"}\n', "per-file-ignores must map"),
        ('[tool.remat-lint]\nextend = "missing.toml"\n', "not found"),
        ('[tool.remat-lint]\nextend-ignore = ["REM001"]\n', "unknown key 'extend-ignore'"),
    ],
)
def test_a_broken_configuration_exits_2_naming_the_file_and_the_reason(nested, text, reason):
    (nested / "sub" / "pyproject.toml").write_text(text)
    proc = cli("sub/inner.py", cwd=nested)
    assert proc.returncode == 2
    assert str(nested / "sub" / "pyproject.toml") in proc.stderr and reason in proc.stderr


def test_an_extend_cycle_is_an_error(nested):
    (nested / "pyproject.toml").write_text('[tool.remat-lint]\nextend = "sub/pyproject.toml"\n')
    (nested / "sub" / "pyproject.toml").write_text('[tool.remat-lint]\nextend = "../pyproject.toml"\n')
    proc = cli(".", cwd=nested)
    assert proc.returncode == 2 and "cycle" in proc.stderr


@pytest.mark.parametrize("value", ["", "REM001,", ","])
def test_an_empty_selector_on_the_command_line_is_a_usage_error(nested, value):
    proc = cli("--select", value, "top.py", cwd=nested)
    assert proc.returncode == 2 and "empty rule selector" in proc.stderr


def test_flake8_reads_the_configuration_of_each_file(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.remat-lint]\ntest-paths = ["checks/"]\nper-file-ignores = {"gen_*.py" = ["REM001"]}\n'
    )
    (tmp_path / "checks").mkdir()
    (tmp_path / "checks" / "c.py").write_text(DISCARDED)
    (tmp_path / "gen_model.py").write_text(BAD)
    (tmp_path / "model.py").write_text(DISCARDED)
    flake8 = subprocess.run(
        [sys.executable, "-m", "flake8", "--select=REM", "."], cwd=tmp_path, capture_output=True, text=True
    )
    assert [line.split(":")[0] + ":" + line.split()[1] for line in flake8.stdout.splitlines()] == ["./model.py:REM007"]
    assert found(".", cwd=tmp_path) == [("model.py", "REM007")]


def test_show_files_and_show_settings_follow_each_folders_configuration(nested):
    (nested / "sub" / "pyproject.toml").write_text(
        '[tool.remat-lint]\nextend-exclude = ["skip"]\nselect = ["REM001"]\n'
    )
    (nested / "sub" / "skip").mkdir()
    (nested / "sub" / "skip" / "x.py").write_text("")
    (nested / "nb.ipynb").write_text('{"cells": []}')
    assert cli("--show-files", ".", cwd=nested).stdout.splitlines() == ["nb.ipynb", "sub/inner.py", "top.py"]
    settings = cli("--show-settings", "sub/inner.py", cwd=nested).stdout
    assert f"config file        {nested / 'sub' / 'pyproject.toml'}" in settings
    assert "enabled            REM001\n" in settings
