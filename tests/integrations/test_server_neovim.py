"""A real editor on the real server: headless Neovim with the configuration docs/editors.md gives
(editors/neovim/remat-lint.lua) sees a misuse as it is typed and repairs it with the code action."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NVIM = shutil.which("nvim")


@pytest.mark.skipif(NVIM is None, reason="nvim not installed (.ci/run installs Debian's neovim package)")
def test_neovim_shows_the_finding_and_applies_the_fix(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.remat-lint]\n")
    model = tmp_path / "model.py"
    model.write_text("import jax\n\n\ndef f(x):\n    return x\n\n")
    bin_dir = tmp_path / "bin"  # `remat-lint` on PATH, as a user's install puts it: this interpreter's
    bin_dir.mkdir()
    (bin_dir / "remat-lint").write_text(f'#!/bin/sh\nexec {sys.executable} -m remat_lint "$@"\n')
    (bin_dir / "remat-lint").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "REMAT_FILE": str(model)}
    command = [
        NVIM,
        "--headless",
        "--clean",
        "-u",
        str(ROOT / "editors/neovim/remat-lint.lua"),
        "-c",
        f"luafile {ROOT / 'tests/server_neovim.lua'}",
    ]
    run = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert "DIAGNOSTIC 6 " in output, output  # the typed line (0-based)
    assert "ACTION REM001: Use `jax.checkpoint_policies.dots_saveable`" in output
    assert "CLEAN" in output
    assert model.read_text().endswith("g = jax.checkpoint(f, policy=jax.checkpoint_policies.dots_saveable)\n")
