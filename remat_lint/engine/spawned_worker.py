"""One fresh Python process that lints, for a run that lints in-process, the files libcst may crash on.

libcst's native parser kills the process on some files that Python's own parser accepts (a stack
overflow on a long ``a and b and ...`` chain: 8,000 operands, 48 KB, measured; an abort when out of
memory on a huge file), so a crash there would end the run and lose every other file's results.

The worker is a new interpreter, not a fork: a fork from a process that runs threads can inherit a
held lock and deadlock (it did once in CI). It is not a ``multiprocessing`` "spawn" either: that
re-runs the parent's main script in the child, which an unguarded script that calls the CLI does
not survive. It talks over two pipes of its own, so a death leaves no shared lock held: the file
it was on gets a REM000 naming the signal, and the next file gets a fresh worker."""

from __future__ import annotations

import os
import subprocess
import sys
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING

from remat_lint.engine.results import FileResult, diagnostic

if TYPE_CHECKING:
    from collections.abc import Callable

    from remat_lint.engine.runner import _Task

_STOP_WAIT_S = 5.0  # for the worker to end after the last task, before it is killed


class SpawnedWorker:
    """Lints tasks one at a time in a child interpreter, started by ``start`` or the first task."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._to: Connection | None = None  # tasks, then None
        self._from: Connection | None = None  # one FileResult per task

    def __enter__(self) -> SpawnedWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        if self._process is not None:
            return
        task_read, task_write = os.pipe()
        result_read, result_write = os.pipe()
        # The runner imports this module: the child names it as text, not by an import here.
        code = (
            "from remat_lint.engine.runner import _lint_task; from remat_lint.engine.spawned_worker import serve; "
            f"serve({task_read}, {result_write}, _lint_task)"
        )
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}  # the modules this process imports
        self._process = subprocess.Popen(
            [sys.executable, "-c", code], pass_fds=(task_read, result_write), env=env, stdin=subprocess.DEVNULL
        )
        os.close(task_read)  # only the child holds these ends: its death closes the pipes
        os.close(result_write)
        self._to = Connection(task_write, readable=False)
        self._from = Connection(result_read, writable=False)

    def lint(self, task: _Task) -> FileResult:
        self.start()
        assert self._process is not None and self._to is not None and self._from is not None
        try:
            self._to.send(task)
            result: FileResult = self._from.recv()
            return result
        except (EOFError, OSError):  # it died on this task
            exitcode = self._process.wait()
            self._forget()
            return FileResult(task.path, findings=[diagnostic(task.path, died_message(exitcode))])

    def close(self) -> None:
        if self._process is None or self._to is None:
            return
        try:
            self._to.send(None)
        except OSError:
            pass
        try:
            self._process.wait(_STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._forget()

    def _forget(self) -> None:
        for conn in (self._to, self._from):
            if conn is not None:
                conn.close()
        self._process = self._to = self._from = None


def serve(task_fd: int, result_fd: int, lint_task: Callable[[_Task], FileResult]) -> None:
    import remat_lint.engine.lint  # noqa: F401 -- before the first task: the parent lints meanwhile

    tasks, results = Connection(task_fd, writable=False), Connection(result_fd, readable=False)
    for task in iter(tasks.recv, None):
        results.send(lint_task(task))


def died_message(exitcode: int) -> str:
    """The REM000 text for a file whose worker died on it, saying how: a signal's name (SIGKILL:
    most often the out-of-memory killer) or the exit status."""
    import signal

    why = f"exit status {exitcode}"
    if exitcode < 0 and -exitcode in signal.valid_signals():
        name = signal.Signals(-exitcode).name
        why = f"{name}: out of memory?" if name == "SIGKILL" else name
    return f"the linter's worker process died on this file ({why}): not linted"
