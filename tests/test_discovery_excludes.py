"""Exclude globs with a slash match the root-relative path of each walked entry, wherever the walk
starts (discovery matches the names of a folder's entries against the folder's relative path)."""

from __future__ import annotations

from pathlib import Path

import pytest

from remat_lint.discovery import discover
from remat_lint.resolver import Resolver

CONFIG = '[tool.remat-lint]\nextend-exclude = ["pkg/gen", "pkg/sub/*_pb2.py", "top_*.py", "*/keep.py"]\n'


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for name in ("top_a.py", "keep.py", "pkg/gen/g.py", "pkg/sub/m_pb2.py", "pkg/sub/m.py", "pkg/top_b.py",
                 "other/pkg/gen/o.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    (tmp_path / "pyproject.toml").write_text(CONFIG)
    return tmp_path


@pytest.mark.parametrize(("cwd", "path", "expected"), [
    (".", ".", ["keep.py", "other/pkg/gen/o.py", "pkg/sub/m.py"]),
    (".", "pkg", ["pkg/sub/m.py"]),
    (".", "./pkg/", ["pkg/sub/m.py"]),
    ("pkg", ".", ["sub/m.py"]),
    ("pkg/sub", "..", ["../sub/m.py"]),
])
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
