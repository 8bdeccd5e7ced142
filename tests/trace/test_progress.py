"""--trace shows progress on a terminal (one stderr line: the programs recorded and compiled, done /
total, and the time elapsed), never in machine formats nor when stderr is not a terminal."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from remat_lint.cli.command import main
from remat_lint.trace.driver import dispatch as driver
from remat_lint.trace.driver.dispatch import TraceOptions, TraceOutcome
from remat_lint.trace.driver.progress import Progress, Tail
from remat_lint.trace.protocol import NoteReply, ProgressReply, encode
from tests.trace_cases import ROOT


def test_the_line_sums_the_programs_of_every_worker_and_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr("time.monotonic", lambda: 12.4)
    replies = tmp_path / "out.jsonl"
    replies.write_text(
        "".join(
            line + "\n"
            for line in (
                encode(ProgressReply(1, 0, stage="recorded", process=7)),
                encode(ProgressReply(2, 0, stage="recorded", process=7)),
                encode(ProgressReply(1, 3, "grad of loss", process=7), "pkg/a.py"),
                encode(NoteReply("not progress"), "pkg/a.py"),
                encode(ProgressReply(2, 4, "value_and_grad of step", process=8), "pkg/b.py"),
            )
        )
        + encode(ProgressReply(4, 4, process=8), "pkg/b.py")[:20]  # a line still being written
    )
    progress = Progress(True, started=0.0, stage="--trace-run: running `pytest`", modules=(1, 2))
    with open(replies, "rb") as handle:
        progress.follow(Tail(handle.fileno()))
    assert err.getvalue() == (
        "\rremat-lint: --trace-run: running `pytest`, 2 differentiated calls recorded, "
        "3/7 programs compiled (now: value_and_grad of step in b.py), 1/2 modules done, 12 s"
    )
    progress.show()  # within a second of the last: not redrawn
    progress.done()
    assert err.getvalue().count("remat-lint") == 1 and err.getvalue().endswith(" s\n")


def test_progress_off_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    replies = tmp_path / "out.jsonl"
    replies.write_text(encode(ProgressReply(1, 3, "grad of loss"), "a.py") + "\n")
    off = Progress(False)
    with open(replies, "rb") as handle:
        off.follow(Tail(handle.fileno()))
    off.module_done()
    off.done()
    assert err.getvalue() == ""


@pytest.mark.parametrize(("fmt", "shown"), [("full", True), ("concise", True), ("json", False), ("sarif", False)])
def test_progress_only_on_a_terminal_in_formats_for_people(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str, shown: bool
) -> None:
    (tmp_path / "model.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    seen: list[TraceOptions] = []
    monkeypatch.setattr(
        driver, "trace", lambda findings, files, settings, options: seen.append(options) or TraceOutcome()
    )
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    main(["--trace", "--no-cache", "--output-format", fmt, "model.py"])
    assert seen[0].progress is shown


MODEL = textwrap.dedent(
    """\
    import jax
    import jax.numpy as jnp


    def mlp(params, x):
        return jnp.tanh(x @ params["w"]) @ params["v"]


    block = jax.checkpoint(mlp, policy=jax.checkpoint_policies.dots_saveable)


    def loss(params, x):
        return jnp.mean(block(params, x) ** 2)
    """
)
TEST = textwrap.dedent(
    """\
    import jax
    import jax.numpy as jnp

    from pkg.model import loss


    def test_grad():
        params = {"w": jnp.ones((8, 16)), "v": jnp.ones((16, 4))}
        assert jax.grad(loss)(params, jnp.ones((2, 8)))["w"].shape == (8, 16)
    """
)


def on_a_terminal(*args: str, cwd: Path) -> tuple[str, str]:
    """``remat-lint ARGS`` with stderr on a pseudo-terminal, as a user runs it: stdout and what the
    terminal received."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "remat_lint", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=follower,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal closed: remat-lint exited
            break
        if not chunk:
            break
        seen += chunk
    stdout, _ = proc.communicate(timeout=600)
    os.close(leader)
    return stdout.decode(), seen.decode(errors="replace")


@pytest.mark.parametrize(("fmt", "shown"), [("concise", True), ("json", False)])
def test_a_trace_run_on_a_terminal_counts_the_programs_it_compiled(tmp_path: Path, fmt: str, shown: bool):
    pytest.importorskip("jax")
    for name, text in {
        "pyproject.toml": "[tool.remat-lint]\n",
        "pkg/__init__.py": "",
        "pkg/model.py": MODEL,
        "tests/test_model.py": TEST,
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    command = f"{sys.executable} -m pytest -q -p no:cacheprovider tests"
    _, terminal = on_a_terminal(
        "--trace", "--trace-run", command, "--no-cache", "--output-format", fmt, "pkg", cwd=tmp_path
    )
    lines = terminal.replace("\r\n", "\n").split("\r")
    progress = [line.splitlines()[0].strip() for line in lines if line.startswith("remat-lint: --trace")]
    if not shown:
        assert progress == []
        return
    assert any(line.startswith(f"remat-lint: --trace-run: running `{command}`") for line in progress)
    # at the end: the calls the run recorded, every program compiled (the run's and the worker's), the module
    last = re.fullmatch(
        r"remat-lint: --trace, 2 differentiated calls recorded, (\d+)/(\d+) programs compiled, 1/1 modules done, \d+ s",
        progress[-1],
    )
    assert last is not None, progress[-1]
    assert last[1] == last[2] and int(last[1]) >= 2
