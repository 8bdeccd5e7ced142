"""The ``remat-lint`` command's entry (the console script and ``python -m remat_lint``): replay the
last identical invocation when nothing it read has changed (``remat_lint/cache/replay.py``), else run
the linter and record what it read and printed for the next one.

Nothing but ``remat_lint.cache.replay`` (os, sys, marshal, BLAKE2) is imported before the replay is
tried; whether the invocation may be replayed at all is decided from its arguments first.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from remat_lint.cli import broken_pipe

    try:
        code = _run(argv)
        if not sys.stdout.closed:  # the server's stdio transport closes it when the client exits
            sys.stdout.flush()  # here, not at exit: a closed pipe must fail where it is caught
        return code
    except BrokenPipeError:  # no record is saved: what was printed is not the whole output
        return broken_pipe.quiet_exit()


def _run(argv: list[str] | None) -> int:
    from remat_lint.cache import replay

    argv = list(sys.argv[1:] if argv is None else argv)
    invocation = replay.plan(argv)
    if invocation is not None:
        code = replay.replay(invocation)
        if code is not None:
            return code
    from remat_lint.cache import recording
    from remat_lint.cli import command as cli

    if invocation is None:
        return cli.main(argv)
    secret = replay.secret(create=True)  # made before the recording: the folders it creates are no inputs
    with recording.record() as run:
        code = cli.main(argv)
    if secret is not None:
        run.save(invocation, secret, code)
    return code
