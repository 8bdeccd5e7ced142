"""No process that a traced module started outlives its worker.

A worker leads its own session and process group, which ``driver._kill`` kills whole; a child
that leaves them (``setsid``, ``start_new_session=True``, ``setpgid``) escapes that. Every worker
is therefore started with a token of its own in its environment (``mark``), which its children
inherit through fork and exec, and ``sweep`` kills every process of this user that carries it,
round after round until none is left (a child may fork while the others are killed). A process
exec'd with an environment of its own making (``env={}``) carries no token: ``Orphans`` makes the
driver the subreaper of its descendants (Linux's ``PR_SET_CHILD_SUBREAPER``) while it traces, so
such a process, once its parents are gone, is the driver's child, and is killed when the trace ends.

Memory: the driver polls a worker's resident set and kills it above the cap; an allocation faster
than the poll overshoots it. On CPU the worker also caps its own data segment (``RLIMIT_DATA``,
private writable memory: measured 231 MB for 227 MB resident after a jitted grad, where the
address space was 1.5 GB, so ``RLIMIT_AS`` would stop XLA itself) at the cap plus ``HEADROOM_MB``:
an allocation past it fails at once with a MemoryError. Not on GPU/TPU, where it is not measured.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

VARIABLE = "REMAT_LINT_TRACE_WORKER"
MEMORY_VARIABLE = "REMAT_LINT_TRACE_DATA_LIMIT_MB"
HEADROOM_MB = 1024  # above the polled cap: the poll still reports an ordinary overrun in its words
ROUNDS = 50  # a fork bomb faster than this many sweeps outruns it: the process group kill stops most
_PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


def mark(env: dict[str, str]) -> str:
    """Give the worker started with ``env`` a token of its own; returns it."""
    token = os.urandom(8).hex()
    env[VARIABLE] = token
    return token


def limit_memory() -> None:
    """In the worker: cap the data segment as the driver asked (soft and hard: the traced code
    cannot raise it again)."""
    value = os.environ.get(MEMORY_VARIABLE, "")
    if not value.isdigit():
        return
    import resource

    limit = int(value) * 1024 * 1024
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


def sweep(token: str) -> None:
    """Kill every process whose environment carries ``token`` (Linux: /proc; elsewhere nothing)."""
    marker = f"{VARIABLE}={token}".encode()
    for _ in range(ROUNDS):
        found = [pid for pid in _processes() if _carries(pid, marker)]
        if not found:
            return
        for pid in found:  # stopped first: a stopped process forks no more while the others are killed
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGSTOP)
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _processes() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit() and int(name) != os.getpid()]
    except OSError:
        return []


def _carries(pid: int, marker: bytes) -> bool:
    """Whether process ``pid`` was started with ``marker`` in its environment (a process that has
    exited, or is another user's, has none to read)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:
            return marker in environ.read().split(b"\0")
    except OSError:
        return False


class Orphans:
    """While a trace runs, this process adopts what its workers orphan; at the end it kills the
    children it did not have before (adopted ones, and what they in turn leave behind)."""

    def __init__(self) -> None:
        self.before = frozenset(_children())
        self.adopting = _subreaper(True)

    def reap(self) -> None:
        if not self.adopting:
            return
        for _ in range(ROUNDS):  # a killed orphan's own children are adopted next
            left = [pid for pid in _children() if pid not in self.before]
            if not left:
                break
            for pid in left:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            for pid in left:
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, 0)
        _subreaper(False)


def _subreaper(on: bool) -> bool:
    """Become (or stop being) the subreaper of this process's descendants; False where the
    system has none (not Linux, no libc found)."""
    if sys.platform != "linux":
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        status: int = libc.prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)
        return status == 0
    except (OSError, AttributeError):
        return False


def _children() -> list[int]:
    """The children of this process (a zombie too: it is reaped by ``Orphans.reap``)."""
    me, found = os.getpid(), []
    for pid in _processes():
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and int(fields[1]) == me:
            found.append(pid)
    return found
