"""Exclude globs with a slash match the root-relative path of each walked entry, wherever the walk
starts (discovery matches the names of a folder's entries against the folder's relative path)."""

from __future__ import annotations

from pathlib import Path

import pytest

from remat_lint.cli.command import main
from remat_lint.config.discovery import discover
from remat_lint.config.resolver import Resolver

CONFIG = '[tool.remat-lint]\nextend-exclude = ["pkg/gen", "pkg/sub/*_pb2.py", "top_*.py", "*/keep.py"]\n'


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for name in (
        "top_a.py",
        "keep.py",
        "pkg/gen/g.py",
        "pkg/sub/m_pb2.py",
        "pkg/sub/m.py",
        "pkg/top_b.py",
        "other/pkg/gen/o.py",
    ):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    (tmp_path / "pyproject.toml").write_text(CONFIG)
    return tmp_path


@pytest.mark.parametrize(
    ("cwd", "path", "expected"),
    [
        (".", ".", ["keep.py", "other/pkg/gen/o.py", "pkg/sub/m.py"]),
        (".", "pkg", ["pkg/sub/m.py"]),
        (".", "./pkg/", ["pkg/sub/m.py"]),
        ("pkg", ".", ["sub/m.py"]),
        ("pkg/sub", "..", ["../sub/m.py"]),
    ],
)
def test_slash_globs_match_root_relative_paths(tree, monkeypatch, cwd, path, expected):
    monkeypatch.chdir(tree / cwd)
    assert discover([path], Resolver()).files == expected


def test_a_walk_outside_the_configuration_root(tree, monkeypatch):
    """With --config, folders outside its root match slash globs against the walked path as given."""
    (tree / "conf").mkdir()
    (tree / "conf" / "pyproject.toml").write_text(CONFIG)
    monkeypatch.chdir(tree)
    resolver = Resolver(config=tree / "conf" / "pyproject.toml")
    kept = ["pkg/sub/m.py"]
    assert discover(["pkg"], resolver).files == kept
    assert discover(["./pkg"], resolver).files == kept
    walked = str(tree / "pkg")  # an absolute path is relative to no root: its entries match no slash glob
    assert discover([walked], resolver).files == [f"{walked}/gen/g.py", f"{walked}/sub/m.py", f"{walked}/sub/m_pb2.py"]


# File discovery (remat_lint/config/discovery.py) pinned where hand-made edits of 2026-11-25 passed the
# suite: stubs found in a folder, a file named twice linted once, a broken symlink named like a module
# skipped in a folder walk (not a file to read).

BAD = "import jax\ng = jax.checkpoint(lambda x: x, policy='dots_saveable')\n"


def test_a_folder_yields_its_stubs_once_each_and_no_broken_symlink(tmp_path, monkeypatch, capsys):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "gone.py").symlink_to(tmp_path / "missing.py")
    (tmp_path / "pkg" / "model.py").write_text(BAD)
    (tmp_path / "pkg" / "stub.pyi").write_text(BAD)
    monkeypatch.chdir(tmp_path)
    assert main(["--no-cache", "--output-format", "concise", "pkg", "pkg/model.py", "./pkg/model.py"]) == 1
    out, err = capsys.readouterr()
    assert [line.split(" `")[0] for line in out.splitlines()] == [
        "pkg/model.py:2:5: REM001",
        "pkg/stub.pyi:2:5: REM001",
    ]
    assert err.startswith("Found 2 errors.")
