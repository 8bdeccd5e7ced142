"""Progress of long ``--trace`` work on a terminal: one stderr line rewritten in place.

A ``--trace-run`` command and the compiles of the differentiated programs take from seconds to
minutes. The line counts programs: the calls the command recorded while it runs, then done / total
programs compiled, summed over every worker and every process of the command, each of which says
where it is in ``ProgressReply`` lines (worker/session.py, worker/recorder.py) that the driver
follows while it waits (``Tail``). The CLI turns progress on only when stderr is a terminal and the
output format is for people (full, concise): never in machine formats or a log.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass, field

from remat_lint.trace.protocol import ProgressReply, decode

MIN_INTERVAL_S = 1.0  # between two redraws of the same line
READ_AT_MOST = 1 << 20  # bytes of replies read at one look


@dataclass
class Tail:
    """The complete lines a process appended to an open file since the last look."""

    fileno: int
    offset: int = 0

    def lines(self) -> list[str]:
        chunk = os.pread(self.fileno, READ_AT_MOST, self.offset)
        end = chunk.rfind(b"\n") + 1  # a line still being written waits for the next look
        self.offset += end
        return chunk[:end].decode("utf-8", "replace").splitlines()


@dataclass
class Progress:
    enabled: bool
    started: float = field(default_factory=time.monotonic)
    stage: str = "--trace"  # what runs: "--trace-run: running `pytest`", "--trace"
    modules: tuple[int, int] = (0, 0)  # modules done, of
    _programs: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)  # (module, process): done, total
    _recorded: dict[int, int] = field(default_factory=dict)  # by process: differentiated calls recorded
    _now: str = ""  # the program compiling last
    _shown: float = 0.0
    _width: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)  # workers are followed from threads

    def follow(self, tail: Tail, module: str = "") -> None:
        """Count what a process reported since the last look (``module``: the one a worker judges;
        a --trace-run process tags its replies) and redraw the line."""
        if not self.enabled:
            return
        with self._lock:
            for raw in tail.lines():
                decoded = decode(raw)
                if decoded is not None and isinstance(decoded[0], ProgressReply):
                    self._count(decoded[0], decoded[1] or module)
        self.show()

    def _count(self, reply: ProgressReply, module: str) -> None:
        if reply.stage == "recorded":
            self._recorded[reply.process] = max(reply.done, self._recorded.get(reply.process, 0))
            return
        self._programs[(module, reply.process)] = (reply.done, reply.total)
        self._now = f"{reply.program} in {os.path.basename(module)}" if reply.program else ""

    def module_done(self) -> None:
        with self._lock:
            self.modules = (self.modules[0] + 1, self.modules[1])
        self.show(force=True)

    def line(self) -> str:
        """What the line says, without the elapsed time."""
        parts = [self.stage]
        recorded = sum(self._recorded.values())
        if recorded:
            parts.append(f"{recorded} differentiated call{'s' if recorded != 1 else ''} recorded")
        done = sum(done for done, _ in self._programs.values())
        total = sum(total for _, total in self._programs.values())
        if total:
            parts.append(f"{done}/{total} programs compiled" + (f" (now: {self._now})" if self._now else ""))
        if self.modules[1]:
            parts.append(f"{self.modules[0]}/{self.modules[1]} modules done")
        return ", ".join(parts)

    def show(self, force: bool = False) -> None:
        """Rewrite the line with the time elapsed (at most once a second unless ``force``)."""
        now = time.monotonic()
        if not self.enabled or (not force and now - self._shown < MIN_INTERVAL_S):
            return
        with self._lock:
            self._shown = now
            text = f"remat-lint: {self.line()}, {now - self.started:.0f} s"
            sys.stderr.write("\r" + text.ljust(self._width))
            sys.stderr.flush()
            self._width = len(text)

    def done(self) -> None:
        """End the line, so that what follows starts on its own."""
        if self.enabled and self._width:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self._width = 0
