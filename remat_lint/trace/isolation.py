"""No process that a traced module started outlives its worker.

A worker leads its own session and process group, which ``driver._kill`` kills whole; a child
that leaves them (``setsid``, ``start_new_session=True``, ``setpgid``) escapes that. Every worker
is therefore started with a token of its own in its environment (``mark``), which its children
inherit through fork and exec, and ``sweep`` kills every process of this user that carries it,
round after round until none is left (a child may fork while the others are killed). What this
cannot follow: a process exec'd with an environment of its own making (``env={}``).

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

VARIABLE = "REMAT_LINT_TRACE_WORKER"
MEMORY_VARIABLE = "REMAT_LINT_TRACE_DATA_LIMIT_MB"
HEADROOM_MB = 1024  # above the polled cap: the poll still reports an ordinary overrun in its words
ROUNDS = 50  # a fork bomb faster than this many sweeps outruns it: the process group kill stops most


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
