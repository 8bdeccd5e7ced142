"""Worker processes (runner._Workers) change how fast a run is, never what it reports."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
from pathlib import Path

import pytest

from remat_lint.config.resolver import Resolver
from remat_lint.config.settings import Settings
from remat_lint.engine import runner

BAD = "import jax\ng = jax.checkpoint(lambda x: x, policy='dots_saveable')\n"  # REM001
PLAIN = "import numpy as np\nx = np.ones(3)\n"


def _tree(tmp_path: Path, bad: set[int]) -> list[str]:
    """More files than runner.EARLY_MIN_FILES, those numbered in ``bad`` with a finding."""
    paths = []
    for i in range(runner.EARLY_MIN_FILES + 20):
        path = tmp_path / f"m{i:03}.py"
        path.write_text(BAD if i in bad else PLAIN)
        paths.append(str(path))
    return paths


def _found(result: runner.RunResult) -> list[tuple[str, int, str]]:
    return [(os.path.basename(f.path), f.start.row, f.code) for f in result.findings]


@pytest.mark.parametrize("min_lines", [0, runner.POOL_MIN_LINES])  # with the other workers, and the first alone
def test_workers_started_while_reading_report_what_one_process_does(tmp_path, monkeypatch, min_lines):
    paths = _tree(tmp_path, bad={0, 7, 110})  # the first file to parse is met first: the workers start at once
    resolver = Resolver.of(Settings(root=tmp_path))
    serial = runner.run(paths, resolver, jobs=1)
    monkeypatch.setattr(runner, "POOL_MIN_LINES", min_lines)
    started = []
    init = runner._Workers.__init__
    monkeypatch.setattr(runner._Workers, "__init__", lambda self, jobs: started.append(jobs) or init(self, jobs))
    pooled = runner.run(paths, resolver, jobs=2)
    assert started == [2]
    assert (
        _found(pooled)
        == _found(serial)
        == [("m000.py", 2, "REM001"), ("m007.py", 2, "REM001"), ("m110.py", 2, "REM001")]
    )
    assert set(pooled.sources) == {paths[0], paths[7], paths[110]}


def test_a_worker_that_dies_is_a_rem000_for_its_file_not_a_hang(tmp_path, monkeypatch):
    paths = _tree(tmp_path, bad={0, 1})
    lint_task = runner._lint_task

    def crash_on_second(task: runner._Task) -> object:
        if task.path == paths[1]:
            os._exit(1)  # as a crash in the native parser would
        return lint_task(task)

    monkeypatch.setattr(runner, "_lint_task", crash_on_second)
    monkeypatch.setattr(runner, "POOL_MIN_LINES", 0)
    result = runner.run(paths, Resolver.of(Settings(root=tmp_path)), jobs=2)
    assert _found(result) == [("m000.py", 2, "REM001"), ("m001.py", 1, "REM000")]
    assert result.findings[1].message == "the linter's worker process died on this file (exit status 1): not linted"


def test_an_error_while_reading_ends_the_workers_instead_of_hanging(tmp_path, monkeypatch):
    """Workers whose results fill the pipe while the main process fails: the error reaches the
    user (a worker cannot exit before its results are read, and nobody would read them)."""
    paths = _tree(tmp_path, bad=set(range(runner.EARLY_MIN_FILES + 20)))
    lint_task, scan, submit = runner._lint_task, runner._Scan.__call__, runner._Workers.submit

    def padded(task: runner._Task) -> object:
        result = lint_task(task)
        result.facts["padding"] = "x" * 100_000
        return result

    def failing(self: runner._Scan, index: int, path: str, data: object) -> object:
        if index == len(paths) - 1:
            raise LookupError("failed while reading")
        return scan(self, index, path, data)

    def when_ready(self: runner._Workers, task: runner._Task) -> None:  # each task is sent at once
        self._ready.wait(30)
        submit(self, task)

    def hung(*_: object) -> None:  # fail instead of hanging the test run
        for worker in multiprocessing.active_children():
            worker.kill()
        pytest.fail("the run hung")  # not TimeoutError: an OSError, which waitpid's caller swallows

    monkeypatch.setattr(runner, "_lint_task", padded)
    monkeypatch.setattr(runner._Scan, "__call__", failing)
    monkeypatch.setattr(runner._Workers, "submit", when_ready)
    monkeypatch.setattr(runner, "POOL_MIN_LINES", 0)
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(30)
    try:
        with pytest.raises(LookupError, match="failed while reading"):
            runner.run(paths, Resolver.of(Settings(root=tmp_path)), jobs=2)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _waiting_in_read(pid: int) -> bool:
    """The process is blocked in read(2): for an idle worker, on the pipe its next task comes by."""
    try:
        return Path(f"/proc/{pid}/syscall").read_text().split()[0] == "0"  # x86-64 read
    except (OSError, IndexError):
        return False


@pytest.mark.skipif(not Path("/proc/self/syscall").exists() or os.uname().machine != "x86_64", reason="Linux x86-64")
def test_a_worker_killed_while_it_waits_for_a_task_does_not_hang_the_pool(tmp_path):
    """The out-of-memory killer may pick an idle worker. With one task queue shared by the workers,
    the one blocked reading it holds the queue's lock, and its death left the others waiting for
    that lock forever: the run hung."""
    import threading

    import psutil

    paths = _tree(tmp_path, bad={0, 5})
    tasks = [
        runner._Task(i, p, Path(p).read_text(), frozenset({"REM001"}), frozenset(), False, None)
        for i, p in enumerate(paths)
    ]
    workers = runner._Workers(2)
    supervisor = psutil.Process(workers._first.pid)
    try:
        assert workers._ready.wait(60)
        reading = []
        for _ in range(600):  # until an idle worker is blocked reading (the lock's holder, if any)
            reading = [p for p in supervisor.children() if _waiting_in_read(p.pid)]
            if reading:
                break
            threading.Event().wait(0.05)
        assert reading
        reading[0].send_signal(signal.SIGKILL)
        reading[0].wait(10)
        for task in tasks:
            workers.submit(task)
        done: list[list[tuple[runner._Task, object]]] = []
        thread = threading.Thread(target=lambda: done.append(workers.run(tasks)), daemon=True)
        thread.start()
        thread.join(120)
        assert not thread.is_alive(), "the pool hung"
    finally:
        for process in [*supervisor.children(recursive=True), supervisor]:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
    found = sorted((os.path.basename(t.path), f.code) for t, r in done[0] for f in r.findings)
    assert found == [("m000.py", "REM001"), ("m005.py", "REM001")]


def test_large_files_with_large_results_do_not_deadlock_a_worker_and_the_supervisor(monkeypatch):
    """A task sent ahead while the worker sent back a large result left both blocked on their
    pipe, each writing a message the other did not read (found on the installed jax and flax
    sources, whose largest files have large results): the run hung."""
    import threading

    import psutil

    from remat_lint.engine.results import FileResult
    from remat_lint.findings import Finding, Position, Severity

    big = 1_000_000  # far more than a socket's buffer

    def large_result(task: runner._Task) -> FileResult:
        finding = Finding("REM001", "n", Severity.ERROR, "x" * big, task.path, Position(1, 0), Position(1, 1))
        return FileResult(task.path, findings=[finding])

    monkeypatch.setattr(runner, "_lint_task", large_result)  # the forked workers inherit it
    text = "y = 1\n" * (big // 6)
    tasks = [runner._Task(i, f"m{i}.py", text, frozenset({"REM001"}), frozenset(), False, None) for i in range(6)]
    workers = runner._Workers(2)
    supervisor = psutil.Process(workers._first.pid)
    done: list[list[tuple[runner._Task, FileResult]]] = []
    try:
        for task in tasks:
            workers.submit(task)
        thread = threading.Thread(target=lambda: done.append(workers.run(tasks)), daemon=True)
        thread.start()
        thread.join(60)
        assert not thread.is_alive(), "the pool hung"
    finally:
        for process in [*supervisor.children(recursive=True), supervisor]:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
    assert [(t.path, len(r.findings[0].message)) for t, r in done[0]] == [(t.path, big) for t in tasks]
