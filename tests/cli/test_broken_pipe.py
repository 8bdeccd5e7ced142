"""A reader that closes the pipe early (``remat-lint rule REM001 | head``) ends the run quietly, as
ruff's does: exit 0, nothing on stderr, and no replay record of the cut output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

FINDING = "import jax\ng = jax.checkpoint(lambda x: x, policy='dots_saveable')\n"


def closed_pipe_run(cwd: Path, *args: str) -> tuple[int, str]:
    """Run the command with its stdout a pipe whose reading end is closed before it prints."""
    process = subprocess.Popen(
        [sys.executable, "-m", "remat_lint", *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    err = process.stderr.read()
    return process.wait(), err


@pytest.mark.parametrize(
    "args",
    [
        ("rule", "REM001"),
        ("rule", "--all", "--output-format", "json"),
        ("a.py",),
        ("--output-format", "json", "a.py"),
        ("--statistics", "a.py"),
        ("--show-files", "."),
        ("--diff", "a.py"),
    ],
)
def test_a_closed_pipe_ends_the_run_quietly(tmp_path: Path, args: tuple[str, ...]) -> None:
    (tmp_path / "a.py").write_text(FINDING)
    assert closed_pipe_run(tmp_path, *args) == (0, "")


def test_a_cut_output_is_not_replayed(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(FINDING)
    closed_pipe_run(tmp_path, "--output-format", "concise", "a.py")
    again = subprocess.run(
        [sys.executable, "-m", "remat_lint", "--output-format", "concise", "a.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert again.returncode == 1
    assert again.stdout.startswith("a.py:2:")
