"""Replaying an unchanged invocation, as ``make`` skips an up-to-date target.

A run that only lints and reports leaves a record in the ``replay`` folder of its cache folder:
the invocation's key (arguments, working directory, the environment variables and terminal it
printed for, the interpreter and the linter's location), every path it read, listed or probed
with that path's stat signature (or its absence), what it printed and its exit code
(``remat_lint/cache/recording.py`` collects them). The next identical invocation finds the record and,
when every path still has its signature, prints the same text and exits with the same code
without importing the linter. The signature of a file read or a folder listed holds its mode,
inode, size and modification and change times in nanoseconds (an edit that keeps the size and
restores the modification time still changes the change time; adding, removing or renaming an
entry changes a folder's times); that of a path only probed, its absence or its mode and inode.

Trust (docs/cache.md): only what a real run of this user recorded is replayed.

- Whether an invocation may be recorded or replayed is decided from its arguments alone, before
  any record is read (``plan``): a plain lint of named paths with options from ``REPLAYABLE``.
- The record lives only in the cache folder the invocation names (``--cache-dir``, else
  ``REMAT_LINT_CACHE_DIR``, else ``.remat_lint_cache`` in the working directory), never in a
  folder above; that folder and its ``replay`` folder must be the user's and not writable by
  others.
- A per-user secret (``secret``) names the record and authenticates its bytes (keyed BLAKE2b)
  before they are decoded: a record written elsewhere, by hand or by another user never matches.
- A record must list the linted paths and the linter's own folder among its inputs.

Only os, sys, marshal and BLAKE2 are imported here: this is all a replay pays beside Python's
start. Records are written to a temporary file and renamed into place; one that cannot be read,
is of another format or another key is a miss.
"""

from __future__ import annotations

import marshal
import os
import sys
from _operator import _compare_digest

compare_digest = _compare_digest  # hmac.compare_digest itself, without hmac's 4 ms import (cache.py uses it too)

try:  # the module hashlib.blake2b comes from: 0.2 ms to import where hashlib (OpenSSL) takes 2.7 ms
    from _blake2 import blake2b
except ImportError:  # pragma: no cover (an interpreter built without it)
    from hashlib import blake2b

FORMAT = "remat-lint replay 2"
CACHE_DIR = ".remat_lint_cache"  # the cache's default folder (result_cache.DEFAULT_DIR), defined here: result_cache.py imports hashlib and pickle
CACHE_DIR_VARIABLE = "REMAT_LINT_CACHE_DIR"  # the cache folder, unless --cache-dir names one (as RUFF_CACHE_DIR)
DIRECTORY = "replay"
KEPT = 256  # records kept (the newest): pre-commit names other files at every commit
# What the linter reads of the environment: --color auto (NO_COLOR, FORCE_COLOR), a
# configuration's `extend = "~/..."` (HOME) and the cache folder. Encodings and sys.path are part of the key too.
ENVIRONMENT = ("NO_COLOR", "FORCE_COLOR", "HOME", CACHE_DIR_VARIABLE)
# The options of a run that only reads and prints: (spelling, whether it takes a value). Any other
# option (--fix, --diff, --add-noqa, --trace, -o, an abbreviation...) or "-" (stdin) is never replayed.
REPLAYABLE = {
    "--select": True,
    "--extend-select": True,
    "--ignore": True,
    "--output-format": True,
    "--color": True,
    "--config": True,
    "--target-jax-version": True,
    "-j": True,
    "--jobs": True,
    "--cache-dir": True,
    "--statistics": False,
    "--exit-zero": False,
    "-q": False,
    "--quiet": False,
    "--force-exclude": False,
    "--exclude": True,
    "--extend-exclude": True,
    "--per-file-ignores": True,
    "--extend-per-file-ignores": True,
    "--ignore-noqa": False,
    "--respect-gitignore": False,
    "--no-respect-gitignore": False,
}
SECRET_BYTES = 32
TAG_BYTES = 32

Signature = tuple[int, int, int, int, int, int]  # mode, inode, device, size, mtime_ns, ctime_ns
UNKNOWN = (-1, -1, -1, -1, -1, -1)  # a path whose stat failed otherwise than by its absence: never matches
_stat = os.stat  # the real one: a recording wraps os.stat to note probes


class Invocation:
    """A recordable invocation: its key, the cache folder its record lives in (absolute) and the
    paths it lints (absolute)."""

    __slots__ = ("key", "folder", "paths")

    def __init__(self, key: str, folder: str, paths: list[str]) -> None:
        self.key, self.folder, self.paths = key, folder, paths


def plan(argv: list[str]) -> Invocation | None:
    """The invocation ``argv`` is, when it may be recorded and replayed; else None. Decided from
    the arguments alone: a lint whose every option is in ``REPLAYABLE``."""
    invocation = key(argv)
    scanned = _scan(argv)
    if invocation is None or scanned is None:
        return None
    cache_dir, paths = scanned
    folder = cache_dir or os.environ.get(CACHE_DIR_VARIABLE) or CACHE_DIR
    return Invocation(invocation, os.path.abspath(folder), [os.path.abspath(path) for path in paths or ["."]])


def _scan(argv: list[str]) -> tuple[str | None, list[str]] | None:
    """The --cache-dir and the paths of a replayable ``argv``, None for any other."""
    arguments = argv[1:] if argv[:1] == ["check"] else argv
    cache_dir: str | None = None
    paths: list[str] = []
    index, options = 0, True
    while index < len(arguments):
        argument = arguments[index]
        index += 1
        if argument == "-":
            return None  # stdin
        if not options or not argument.startswith("-"):
            if argument in ("rule", "server") and not paths and index == 1:
                return None  # `remat-lint rule CODE` prints documentation; a server converses on stdio
            paths.append(argument)
            continue
        if argument == "--":
            options = False
            continue
        name, equals, value = argument.partition("=")
        if name not in REPLAYABLE or (equals and not REPLAYABLE[name]):
            return None
        if REPLAYABLE[name] and not equals:
            if index == len(arguments):
                return None
            value, index = arguments[index], index + 1
        if name == "--cache-dir":
            cache_dir = value
    return cache_dir, paths


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
    parts = [
        FORMAT,
        cwd,
        user,
        own_folder(),
        sys.version,
        sys.executable,
        repr(sys.path),
        repr(sys.warnoptions),
        *streams,
        *(f"{name}={os.environ.get(name)}" for name in ENVIRONMENT),
        *argv,
    ]
    return "\0".join(parts)


def own_folder() -> str:
    """The linter's package folder (``remat_lint/``, above this module's ``cache/``): every record
    lists it among its inputs."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def secret_path() -> str:
    """The per-user secret's file, in the user's cache folder (XDG_CACHE_HOME, else ~/.cache)."""
    base = os.environ.get("XDG_CACHE_HOME")
    if not base or not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "remat-lint", "secret")


def secret(create: bool = False) -> bytes | None:
    """This user's secret, made on first use when ``create`` (random bytes, mode 0600, the user's
    own); None when there is none or it is not the user's alone."""
    path = secret_path()
    found = _read_secret(path)
    if found is None and create:
        try:
            _create_secret(path)
        except OSError:
            return None
        found = _read_secret(path)
    return found


def _read_secret(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if hasattr(os, "getuid") and (st.st_uid != os.getuid() or st.st_mode & 0o077):
            return None
        data = os.read(fd, SECRET_BYTES + 1)
    finally:
        os.close(fd)
    return data if len(data) == SECRET_BYTES else None


def _create_secret(path: str) -> None:
    """Written whole under a temporary name, then linked into place: a concurrent first run reads
    either no secret or the one that stays."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    temporary = f"{path}.tmp-{os.getpid()}"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(os.urandom(SECRET_BYTES))
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass  # another run made it first
    finally:
        os.unlink(temporary)


def trusted(folder: str) -> bool:
    """Whether ``folder`` is a folder of this user's that others cannot write to."""
    try:
        st = _stat(folder)
    except (OSError, ValueError):
        return False
    if not (st.st_mode & 0o170000) == 0o040000:
        return False
    return not hasattr(os, "getuid") or (st.st_uid == os.getuid() and not st.st_mode & 0o002)


def tag(secret_: bytes, data: bytes) -> bytes:
    """The authentication tag of ``data`` under the user's secret."""
    return blake2b(data, key=secret_, digest_size=TAG_BYTES).digest()


def signature(path: str, follow_symlinks: bool = True, content: bool = True) -> Signature | None:
    """The stat signature of ``path``, None when it does not exist. Without ``content``, only what
    a probe such as ``os.path.isfile`` decides by: the type, permissions and identity of the file."""
    try:
        st = _stat(path, follow_symlinks=follow_symlinks)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, ValueError):
        return UNKNOWN
    if not content:
        return (st.st_mode, st.st_ino, st.st_dev, 0, 0, 0)
    return (st.st_mode, st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def record_path(invocation: Invocation, secret_: bytes) -> str:
    """Where the record of ``invocation`` is: named by the secret, so no other user's or machine's
    record can sit under that name."""
    name = blake2b(invocation.key.encode("utf-8", "surrogatepass"), key=secret_, digest_size=16).hexdigest()
    return os.path.join(invocation.folder, DIRECTORY, name)


def replay(invocation: Invocation) -> int | None:
    """Print what the last run of ``invocation`` printed and return its exit code, when this user
    recorded it in a folder of theirs and nothing it read has changed; else None (nothing printed)."""
    secret_ = secret()
    if secret_ is None or not (trusted(invocation.folder) and trusted(os.path.join(invocation.folder, DIRECTORY))):
        return None
    try:
        with open(record_path(invocation, secret_), "rb") as handle:
            data = handle.read()
        if len(data) <= TAG_BYTES or not compare_digest(tag(secret_, data[TAG_BYTES:]), data[:TAG_BYTES]):
            return None  # not written by this user's linter: never decoded
        chunks, code = _valid(marshal.loads(data[TAG_BYTES:]), invocation)
    except (OSError, ValueError, EOFError, TypeError):  # none there, or a corrupt or foreign record
        return None
    if chunks is None:
        return None
    for stream, text in chunks:
        (sys.stdout if stream == 1 else sys.stderr).write(text)
        (sys.stdout if stream == 1 else sys.stderr).flush()  # keeps stdout and stderr in order on a terminal
    return code


def _valid(record: object, invocation: Invocation) -> tuple[list[tuple[int, str]] | None, int]:
    """The record's output and exit code; no output when an input changed or the record does not
    list the linted paths and the linter's folder. Raises TypeError or ValueError for a record of
    another shape."""
    if not (isinstance(record, tuple) and len(record) == 5 and record[0] == FORMAT and record[1] == invocation.key):
        raise ValueError("another record")
    _, _, inputs, chunks, code = record
    if not (isinstance(code, int) and all(isinstance(s, int) and isinstance(t, str) for s, t in chunks)):
        raise TypeError("malformed record")
    listed = {os.path.abspath(path) for path, follow_symlinks, content, _ in inputs if follow_symlinks and content}
    if not listed.issuperset([*invocation.paths, own_folder()]):
        return None, code
    for path, follow_symlinks, content, expected in inputs:
        if signature(path, follow_symlinks, content) != expected:
            return None, code
    return list(chunks), code


def write(
    invocation: Invocation,
    secret_: bytes,
    inputs: list[tuple[str, bool, bool, Signature | None]],
    chunks: list[tuple[int, str]],
    code: int,
) -> None:
    """Write the record of a run (raises OSError when the cache directory cannot be written)."""
    import contextlib  # here: a replay never writes

    directory = os.path.join(invocation.folder, DIRECTORY)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    target = record_path(invocation, secret_)
    temporary = f"{target}.tmp-{os.getpid()}"
    payload = marshal.dumps((FORMAT, invocation.key, tuple(inputs), tuple(chunks), code))
    try:
        with open(temporary, "wb") as handle:
            handle.write(tag(secret_, payload) + payload)
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
