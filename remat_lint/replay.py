"""Replaying an unchanged invocation, as ``make`` skips an up-to-date target.

A run that only lints and reports leaves a record in ``.remat_lint_cache/replay/``: the
invocation's key (arguments, working directory, the environment variables and terminal it
printed for, the interpreter and the linter's location), every path it read, listed or probed
with that path's stat signature at the end of the run (or its absence), what it printed and its
exit code (``remat_lint/recording.py`` collects them). The next identical invocation finds the
record and, when every path still has its signature, prints the same text and exits with the
same code without importing the linter. The signature of a file read or a folder listed holds its
mode, inode, size and modification and change times in nanoseconds (an edit that keeps the size
and restores the modification time still changes the change time; adding, removing or renaming
an entry changes a folder's times); that of a path only probed, its absence or its mode and inode.

Only os, sys and marshal are imported here: this is all a replay pays beside Python's start.
Records are written to a temporary file and renamed into place; one that cannot be read, is of
another format or another key is a miss.
"""

from __future__ import annotations

import marshal
import os
import sys

FORMAT = "remat-lint replay 1"
CACHE_DIR = ".remat_lint_cache"  # the cache's default folder (cache.DEFAULT_DIR), defined here: cache.py imports hashlib and pickle
DIRECTORY = "replay"
KEPT = 256  # records kept (the newest): pre-commit names other files at every commit
# What the linter reads of the environment: --color auto (NO_COLOR, FORCE_COLOR) and a
# configuration's `extend = "~/..."` (HOME). Encodings and sys.path are part of the key too.
ENVIRONMENT = ("NO_COLOR", "FORCE_COLOR", "HOME")
_PRIME = (1 << 61) - 1

Signature = tuple[int, int, int, int, int, int]  # mode, inode, device, size, mtime_ns, ctime_ns
UNKNOWN = (-1, -1, -1, -1, -1, -1)  # a path whose stat failed otherwise than by its absence: never matches


def key(argv: list[str]) -> str | None:
    """What identifies the invocation, or None when it cannot be replayed (no stdout, no cwd): the
    arguments, the working directory and user, the linter's location, the interpreter, its
    import path and warning options, the output streams and the environment variables read."""
    if sys.stdout is None or sys.stderr is None:
        return None
    try:
        cwd = os.getcwd()
        streams = [f"{s.isatty()}:{s.encoding}:{s.errors}" for s in (sys.stdout, sys.stderr)]
    except (OSError, ValueError, AttributeError):
        return None
    user = str(os.getuid()) if hasattr(os, "getuid") else ""  # what it may read ("cannot read file" findings)
    parts = [FORMAT, cwd, user, os.path.dirname(os.path.abspath(__file__)), sys.version, sys.executable, repr(sys.path),
             repr(sys.warnoptions), *streams, *(f"{name}={os.environ.get(name)}" for name in ENVIRONMENT), *argv]
    return "\0".join(parts)


def signature(path: str, follow_symlinks: bool = True, content: bool = True) -> Signature | None:
    """The stat signature of ``path``, None when it does not exist. Without ``content``, only what
    a probe such as ``os.path.isfile`` decides by: the type, permissions and identity of the file."""
    try:
        st = os.stat(path, follow_symlinks=follow_symlinks)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, ValueError):
        return UNKNOWN
    if not content:
        return (st.st_mode, st.st_ino, st.st_dev, 0, 0, 0)
    return (st.st_mode, st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def record_name(invocation: str) -> str:
    return format(int.from_bytes(invocation.encode("utf-8", "surrogatepass"), "little") % _PRIME, "016x")


def locations(invocation: str) -> list[str]:
    """Where a record of ``invocation`` may be: in the default cache directory of the working
    directory or of a folder above it (where the configuration that sets the cache's root is)."""
    name, directory, found = record_name(invocation), os.getcwd(), []
    while True:
        found.append(os.path.join(directory, CACHE_DIR, DIRECTORY, name))
        parent = os.path.dirname(directory)
        if parent == directory:
            return found
        directory = parent


def replay(invocation: str) -> int | None:
    """Print what the last run of ``invocation`` printed and return its exit code, when a record of
    it exists and nothing it read has changed; else None (nothing printed)."""
    for location in locations(invocation):
        try:
            with open(location, "rb") as handle:
                record = marshal.loads(handle.read())
            chunks, code = _valid(record, invocation)
        except (OSError, ValueError, EOFError, TypeError):  # none there, or a corrupt or foreign record
            continue
        if chunks is not None:
            for stream, text in chunks:
                (sys.stdout if stream == 1 else sys.stderr).write(text)
                (sys.stdout if stream == 1 else sys.stderr).flush()  # keeps stdout and stderr in order on a terminal
            return code
    return None


def _valid(record: object, invocation: str) -> tuple[list[tuple[int, str]] | None, int]:
    """The record's output and exit code; no output when an input changed. Raises TypeError or
    ValueError for a record of another shape."""
    if not (isinstance(record, tuple) and len(record) == 5 and record[0] == FORMAT and record[1] == invocation):
        raise ValueError("another record")
    _, _, inputs, chunks, code = record
    if not (isinstance(code, int) and all(isinstance(s, int) and isinstance(t, str) for s, t in chunks)):
        raise TypeError("malformed record")
    for path, follow_symlinks, content, expected in inputs:
        if signature(path, follow_symlinks, content) != expected:
            return None, code
    return list(chunks), code


def write(cache_root: str, invocation: str, inputs: list[tuple[str, bool, bool, Signature | None]],
          chunks: list[tuple[int, str]], code: int) -> None:
    """Write the record of a run (raises OSError when the cache directory cannot be written)."""
    import contextlib  # here: a replay never writes

    directory = os.path.join(cache_root, DIRECTORY)
    os.makedirs(directory, exist_ok=True)
    target = os.path.join(directory, record_name(invocation))
    temporary = f"{target}.tmp-{os.getpid()}"
    try:
        with open(temporary, "wb") as handle:
            handle.write(marshal.dumps((FORMAT, invocation, tuple(inputs), tuple(chunks), code)))
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _prune(directory)


def _prune(directory: str) -> None:
    """Keep the newest KEPT records."""
    with os.scandir(directory) as entries:
        records = [(entry.stat().st_mtime_ns, entry.path) for entry in entries if ".tmp-" not in entry.name]
    for _, path in sorted(records)[:-KEPT]:
        os.unlink(path)
