"""A worker that dies on one file (out of memory, an abort in the parser) costs that file a REM000
and nothing else: the run goes on and every other file's findings are reported
(remat_lint/engine/runner.py's supervisor). The crash is injected into the forked workers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from remat_lint.cli import command as cli
from remat_lint.engine import lint as engine
from remat_lint.engine import runner, spawned_worker

BAD = "import jax\ng = jax.checkpoint(lambda x: x, policy='dots_saveable')\n"


def crashing_on(name: str, how: signal.Signals):
    real = runner._lint_task

    def lint_task(task):
        if os.path.basename(task.path) == name:
            os.kill(os.getpid(), how)  # as the out-of-memory killer (SIGKILL) or a C abort (SIGABRT)
        return real(task)

    return lint_task


@pytest.mark.skipif(sys.platform != "linux", reason="workers are forked on Linux only")
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGABRT, signal.SIGSEGV])
def test_a_worker_killed_on_one_file_gives_that_file_a_rem000_and_the_others_their_findings(
    tmp_path, monkeypatch, capsys, how
):
    for i in range(6):
        (tmp_path / f"m{i}.py").write_text(BAD)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "POOL_MIN_LINES", 0)  # a pool for these few lines
    monkeypatch.setattr(runner, "_lint_task", crashing_on("m2.py", how))
    code = cli.main(["--no-cache", "-j", "2", "--output-format", "concise", "-q", "."])
    lines = capsys.readouterr().out.splitlines()
    assert code == 1
    assert [line for line in lines if line.startswith("m2.py")] == [
        f"m2.py:1:1: REM000 the linter's worker process died on this file ({how.name}"
        + (": out of memory?" if how is signal.SIGKILL else "")
        + "): not linted"
    ]
    assert sorted(line.split(":")[0] for line in lines if "REM001" in line) == [f"m{i}.py" for i in range(6) if i != 2]


def test_out_of_memory_in_the_linting_process_is_a_rem000_for_that_file(tmp_path, monkeypatch, capsys):
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(BAD)
    monkeypatch.chdir(tmp_path)
    lint_source = engine.lint_source

    def exhausting(path, *args, **kwargs):
        if path.endswith("a.py"):
            raise MemoryError
        return lint_source(path, *args, **kwargs)

    monkeypatch.setattr(engine, "lint_source", exhausting)
    assert cli.main(["--no-cache", "-j", "1", "--output-format", "concise", "-q", "."]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "a.py:1:1: REM000 out of memory while linting this file: not linted",
        "b.py:2:5: REM001 `policy='dots_saveable'` is a string, not a policy",
    ]


# Python's parser accepts this chain; libcst's native parser overflows its stack on it (SIGSEGV,
# measured from 8,000 operands). 20,000 keep the crash certain; the file is 120 KB.
PARSER_BOMB = BAD + "x = " + " and ".join(["a"] * 20_000) + "\n"


@pytest.mark.skipif(sys.platform != "linux", reason="the crash was measured on Linux")
@pytest.mark.parametrize("jobs", [["-j", "1"], []], ids=["-j 1", "default jobs"])
def test_a_file_that_crashes_the_parser_costs_only_itself_in_an_in_process_run(tmp_path, jobs):
    (tmp_path / "a.py").write_text(BAD)
    (tmp_path / "bomb.py").write_text(PARSER_BOMB)
    (tmp_path / "z.py").write_text(BAD)
    run = subprocess.run(
        [sys.executable, "-m", "remat_lint", "--no-cache", *jobs, "--output-format", "concise", "-q", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (run.returncode, run.stderr) == (1, "")
    assert run.stdout.splitlines() == [
        "a.py:2:5: REM001 `policy='dots_saveable'` is a string, not a policy",
        "bomb.py:1:1: REM000 the linter's worker process died on this file (SIGSEGV): not linted",
        "z.py:2:5: REM001 `policy='dots_saveable'` is a string, not a policy",
    ]


def test_a_run_of_small_files_starts_no_spawned_worker(tmp_path, monkeypatch, capsys):
    (tmp_path / "a.py").write_text(BAD)
    monkeypatch.chdir(tmp_path)

    def refuse(self):
        raise AssertionError("a spawned worker for a small file")

    monkeypatch.setattr(spawned_worker.SpawnedWorker, "start", refuse)
    assert cli.main(["--no-cache", "-j", "1", "--output-format", "concise", "-q", "."]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "a.py:2:5: REM001 `policy='dots_saveable'` is a string, not a policy"
    ]
