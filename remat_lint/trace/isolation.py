"""No process that a traced module started outlives its worker.

A worker leads its own session and process group, which ``driver._kill`` kills whole; a child
that leaves them (``setsid``, ``start_new_session=True``, ``setpgid``) escapes that. Every worker
is therefore started with a token of its own in its environment (``mark``), which its children
inherit through fork and exec, and ``sweep`` kills every process of this user that carries it,
round after round until none is left (a child may fork while the others are killed). What this
cannot follow: a process exec'd with an environment of its own making (``env={}``).
"""

from __future__ import annotations

import contextlib
import os
import signal

VARIABLE = "REMAT_LINT_TRACE_WORKER"
ROUNDS = 50  # a fork bomb faster than this many sweeps outruns it: the process group kill stops most


def mark(env: dict[str, str]) -> str:
    """Give the worker started with ``env`` a token of its own; returns it."""
    token = os.urandom(8).hex()
    env[VARIABLE] = token
    return token


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
