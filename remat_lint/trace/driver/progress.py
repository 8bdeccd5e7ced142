"""Progress of long ``--trace`` work on a terminal: one stderr line rewritten in place.

A ``--trace-run`` command and the compiles of each module's programs take from seconds to minutes.
The CLI turns progress on only when stderr is a terminal and the output format is for people
(full, concise): never in machine formats or a log.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field

MIN_INTERVAL_S = 1.0  # between two redraws of the same line


@dataclass
class Progress:
    enabled: bool
    started: float = field(default_factory=time.monotonic)
    _shown: float = 0.0
    _width: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)  # modules are traced from threads

    def show(self, what: str, force: bool = False) -> None:
        """Rewrite the line with ``what`` and the time elapsed (at most once a second unless ``force``)."""
        now = time.monotonic()
        if not self.enabled or (not force and now - self._shown < MIN_INTERVAL_S):
            return
        with self._lock:
            self._shown = now
            text = f"remat-lint: {what}, {now - self.started:.0f} s"
            sys.stderr.write("\r" + text.ljust(self._width))
            sys.stderr.flush()
            self._width = len(text)

    def done(self) -> None:
        """End the line, so that what follows starts on its own."""
        if self.enabled and self._width:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self._width = 0
