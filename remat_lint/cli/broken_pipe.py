"""A reader that closes the pipe early (``remat-lint rule --all | head``) ends the run quietly.

ruff treats a broken pipe as the reader's choice and exits 0 without a word; so does remat-lint.
Only ``os`` and ``sys`` here: the launcher imports this before it replays a run.
"""

from __future__ import annotations

import os
import sys


def quiet_exit() -> int:
    """Point stdout and stderr at /dev/null, so that the interpreter's last flush of what is still
    buffered cannot fail again at exit (the recipe of Python's ``signal`` documentation)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.__stdout__, sys.__stderr__):
        if stream is not None:
            try:
                os.dup2(devnull, stream.fileno())
            except (OSError, ValueError):  # no descriptor (an embedding host): nothing to flush there
                pass
    os.close(devnull)
    return 0
