"""The ``remat-lint`` command's entry (the console script and ``python -m remat_lint``): replay the
last identical invocation when nothing it read has changed (``remat_lint/replay.py``), else run
the linter and record what it read and printed for the next one.

Nothing but ``remat_lint.replay`` (os, sys, marshal) is imported before the replay is tried.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from remat_lint import replay

    argv = list(sys.argv[1:] if argv is None else argv)
    # A server session is a conversation on stdio: nothing to record, nothing to replay.
    invocation = replay.key(argv) if argv[:1] != ["server"] else None
    if invocation is not None:
        code = replay.replay(invocation)
        if code is not None:
            return code
    from remat_lint import cli, recording

    if invocation is None:
        return cli.main(argv)
    with recording.record() as run:
        code = cli.main(argv)
    run.save(invocation, code)
    return code
