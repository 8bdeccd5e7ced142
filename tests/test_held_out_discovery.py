"""File discovery (remat_lint/discovery.py) pinned where hand-made edits of 2026-11-25 passed the
suite: stubs found in a folder, a file named twice linted once, a broken symlink named like a module
skipped in a folder walk (not a file to read)."""

from __future__ import annotations

from remat_lint.cli import main

BAD = "import jax\ng = jax.checkpoint(lambda x: x, policy='dots_saveable')\n"


def test_a_folder_yields_its_stubs_once_each_and_no_broken_symlink(tmp_path, monkeypatch, capsys):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "gone.py").symlink_to(tmp_path / "missing.py")
    (tmp_path / "pkg" / "model.py").write_text(BAD)
    (tmp_path / "pkg" / "stub.pyi").write_text(BAD)
    monkeypatch.chdir(tmp_path)
    assert main(["--no-cache", "--output-format", "concise", "pkg", "pkg/model.py", "./pkg/model.py"]) == 1
    out, err = capsys.readouterr()
    assert [line.split(" `")[0] for line in out.splitlines()] == ["pkg/model.py:2:5: REM001", "pkg/stub.pyi:2:5: REM001"]
    assert err.startswith("Found 2 errors.")
