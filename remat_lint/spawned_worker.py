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

from remat_lint.results import FileResult, diagnostic

if TYPE_CHECKING:
    from remat_lint.runner import _Task

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
        code = f"from remat_lint.spawned_worker import _serve; _serve({task_read}, {result_write})"
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
            return self._from.recv()
        except (EOFError, OSError):  # it died on this task
            exitcode = self._process.wait()
            self._forget()
            from remat_lint.runner import died_message

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


def _serve(task_fd: int, result_fd: int) -> None:
    import remat_lint.engine  # noqa: F401 -- before the first task: the parent lints meanwhile
    from remat_lint.runner import _lint_task

    tasks, results = Connection(task_fd, writable=False), Connection(result_fd, readable=False)
    for task in iter(tasks.recv, None):
        results.send(_lint_task(task))
