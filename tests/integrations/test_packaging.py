"""The distribution a user installs: rules ship inside the package, entry points are declared."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def test_every_subpackage_is_listed():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {"remat_lint.rules"} | {
        ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "remat_lint").rglob("__init__.py")
    }
    assert listed == on_disk


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )
    [path] = out.glob("remat_lint-*.whl")
    return zipfile.ZipFile(path)


def test_wheel_ships_the_rules(wheel):
    names = set(wheel.namelist())
    rules = {p.name for p in (ROOT / "rules").glob("rem*.py")}
    assert rules and {f"remat_lint/rules/{name}" for name in rules} <= names


def test_wheel_declares_cli_and_flake8_entry_points(wheel):
    [entry_points] = [n for n in wheel.namelist() if n.endswith("entry_points.txt")]
    text = wheel.read(entry_points).decode()
    assert "remat-lint = remat_lint.cli.launch:main" in text
    assert "[flake8.extension]" in text and "REM = remat_lint.flake8_plugin:Plugin" in text
