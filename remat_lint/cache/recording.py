"""What a full run reads and prints, for the record that lets the next identical run replay it
(``remat_lint/cache/replay.py``).

While a run is recorded, every path it opens for reading or lists (Python's audit events
``open``, ``os.listdir`` and ``os.scandir``, which the import system raises too) and every path it
probes with ``os.stat`` or ``os.lstat`` (``os.path.isfile``, pathlib's ``is_file``, the
configuration looked for and not found: those two functions are wrapped for the run) is noted;
what it prints passes through to the real streams and is kept. The files read and the folders
listed are inputs with their content (a folder's signature changes when an entry is added,
removed or renamed), the paths probed with their absence, type and identity: the configuration
files looked for up the tree, the markers of a project's root. The cache's own files are not
inputs: an entry is a function of the bytes it is keyed by.

The record is written only for a run that the CLI declared a plain lint (``allow``) whose cache
folder is the one the launcher reads records from, that ended with exit code 0 or 1, printed only
through ``write``, wrote no file but the cache's (a forked worker neither read nor printed
anything) and whose inputs are not stale: each input's signature is taken when it is first read
and again before the record is written, and they must agree (a file rewritten during the run with
its modification time restored, by ``cp -p`` or ``rsync -a``, changes its change time); nor may
its modification or change time be within ``RACY_NS`` of the run's start: a file changed that
soon after it was read could keep its signature (git's "racy" timestamps). When in doubt (a probe
relative to a directory descriptor, a stat error), nothing is written.
"""

from __future__ import annotations

import mmap
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO

from remat_lint.cache import replay

if TYPE_CHECKING:
    from remat_lint.cache.result_cache import Cache

RACY_NS = 2_000_000_000  # coarser than any filesystem's timestamps, and than the kernel's clock ticks
_WRITES = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


class Recording:
    def __init__(self) -> None:
        self.start_ns = time.time_ns()
        # (path, whether stat follows symlinks) -> whether its content was read (else only probed)
        self.paths: dict[tuple[str, bool], bool] = {}
        self.first: dict[tuple[str, bool], replay.Signature | None] = {}  # each path's signature when first noted
        self.chunks: list[tuple[int, str]] = []  # (1 for stdout or 2 for stderr, text), in order
        self.written: set[str] = set()  # paths opened for writing: the cache's only, or no record
        self.cache: Cache | None = None  # set by ``allow``: the run may be replayed
        self.doubtful = False
        # A forked worker's reads and prints are not seen here: it says so in this shared byte.
        self.in_worker = False
        self._worker_did = mmap.mmap(-1, 1)

    def note(self, path: Any, follow_symlinks: bool = True, content: bool = True, write: bool = False) -> None:
        if isinstance(path, int):  # a file descriptor: its path was noted when it was opened
            return
        path = os.fsdecode(path)
        if ".pyc" in os.path.basename(path):  # an import's cached bytecode, read or written (x.pyc.<id> first)
            return
        if self.in_worker:
            self._worker_did[0] = 1
        elif write:
            self.written.add(path)
        else:
            key = (path, follow_symlinks)
            self.paths[key] = content or self.paths.get(key, False)
            if key not in self.first:
                self.first[key] = replay.signature(path, follow_symlinks)

    def printed(self, stream: int, text: str) -> None:
        if self.in_worker:
            self._worker_did[0] = 1
        elif self.chunks and self.chunks[-1][0] == stream:
            self.chunks[-1] = (stream, self.chunks[-1][1] + text)
        else:
            self.chunks.append((stream, text))

    def save(self, invocation: replay.Invocation, secret: bytes, code: int) -> None:
        """Write the replay record, when the run allows one."""
        if self.cache is None or not self.cache.enabled or self.doubtful or self._worker_did[0] or code not in (0, 1):
            return
        if os.path.abspath(self.cache.root) != invocation.folder:
            return  # not where the launcher looks (a cache-dir set by the configuration)
        from remat_lint.cache.result_cache import code_paths

        # The cache's files (spelt from its root, absolute) and the user's secret are not inputs.
        own = (str(self.cache.root), os.path.dirname(replay.secret_path()))
        if not all(_is_ancestor(own, path) for path in self.written):
            return
        required = [*invocation.paths, replay.own_folder(), *(path for _, path in code_paths())]
        paths = {**self.paths, **{(path, True): True for path in required}}
        inputs = []
        for (path, follow_symlinks), content in sorted(paths.items()):
            if _is_ancestor(own, path):
                continue
            signature = replay.signature(path, follow_symlinks, content)
            if signature == replay.UNKNOWN or self._stale((path, follow_symlinks), signature):
                return
            inputs.append((path, follow_symlinks, content, signature))
        if not replay.trusted(invocation.folder):
            return
        try:
            replay.write(invocation, secret, inputs, self.chunks, code)
        except OSError:
            pass  # the record is an optimisation only

    def _stale(self, key: tuple[str, bool], now: replay.Signature | None) -> bool:
        """Whether the input changed since it was first read, or recently enough that a change
        to come could keep its signature."""
        first = self.first.get(key, now)
        if now is None or first is None:
            return first != now
        if now[:3] != first[:3] or (now[3:] != (0, 0, 0) and now[3:] != first[3:]):
            return True
        return racy(now, self.start_ns)


def racy(signature: replay.Signature, since_ns: int) -> bool:
    """The file was modified or changed within ``RACY_NS`` of ``since_ns`` (or after): a change to
    come could keep this signature."""
    return max(signature[4], signature[5]) >= since_ns - RACY_NS


_current: Recording | None = None


def allow(cache: Cache | None) -> None:
    """Called by the CLI for a run whose output is a function of what it reads (a plain lint that
    writes no file): with a cache (``--no-cache`` disables replays too), it may be replayed."""
    if _current is not None and cache is not None:
        _current.cache = cache


@contextmanager
def record() -> Iterator[Recording]:
    """Record what the run in the ``with`` block reads and prints."""
    global _current
    recording = Recording()
    _install_hooks()
    real = os.stat, os.lstat, sys.stdout, sys.stderr

    def stat(path: Any, *, dir_fd: int | None = None, follow_symlinks: bool = True) -> os.stat_result:
        _probe(recording, path, dir_fd, follow_symlinks)
        return real[0](path, dir_fd=dir_fd, follow_symlinks=follow_symlinks)

    def lstat(path: Any, *, dir_fd: int | None = None) -> os.stat_result:
        _probe(recording, path, dir_fd, False)
        return real[1](path, dir_fd=dir_fd)

    os.stat, os.lstat = stat, lstat
    sys.stdout, sys.stderr = _Tee(real[2], recording, 1), _Tee(real[3], recording, 2)
    _current = recording
    try:
        yield recording
    finally:
        _current = None
        os.stat, os.lstat, sys.stdout, sys.stderr = real


def _probe(recording: Recording, path: Any, dir_fd: int | None, follow_symlinks: bool) -> None:
    if dir_fd is not None:
        recording.doubtful = True
    else:
        recording.note(path, follow_symlinks, content=False)


class _Tee:
    """A text stream that keeps what is written through it. A run that reaches for the stream
    beneath (its bytes buffer, its file descriptor) prints what is not kept: no record."""

    def __init__(self, stream: TextIO, recording: Recording, number: int) -> None:
        self._stream, self._recording, self._number = stream, recording, number

    def write(self, text: str) -> int:
        written = self._stream.write(text)
        self._recording.printed(self._number, text)
        return written

    def __getattr__(self, name: str) -> Any:
        if name in ("buffer", "fileno", "writelines", "detach"):
            self._recording.doubtful = True
        return getattr(self._stream, name)


_hooked = False


def _install_hooks() -> None:
    """Once per process (an audit hook cannot be removed); they do nothing outside a recording."""
    global _hooked
    if not _hooked:
        sys.addaudithook(_audit)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_in_worker)
        _hooked = True


def _in_worker() -> None:
    if _current is not None:
        _current.in_worker = True


def _audit(event: str, args: tuple[Any, ...]) -> None:
    recording = _current
    if recording is None or event not in ("open", "os.listdir", "os.scandir"):
        return
    try:
        if event == "open":
            path, _, flags = args
            recording.note(path, write=not isinstance(flags, int) or bool(flags & _WRITES))
        else:
            recording.note("." if args[0] is None else args[0])
    except Exception:  # an exception here would fail the audited call itself
        recording.doubtful = True


def _is_ancestor(folders: tuple[str, ...], path: str) -> bool:
    return any(path == folder or path.startswith(folder.rstrip(os.sep) + os.sep) for folder in folders)


def noted_read(path: str) -> None:
    """``path``'s content was used without opening it (its facts kept by its signature): the
    record holds it as read."""
    if _current is not None:
        _current.note(path)
