"""Rewriting a user's file (``--fix``, ``--add-noqa``): the file is always its old or its new text,
never a part, and keeps its mode and owner.

The new text is written and synced to an unnamed file in the same folder (Linux's ``O_TMPFILE``),
which gets a name only from ``link`` to ``rename``: a run killed at any other moment leaves no
temporary file behind (elsewhere, a named temporary file, removed on error). ``os.replace`` then
swaps it in whole, so a reader or a concurrent run sees one text or the other. A kill that lands
in that window (measured: about 1 kill in 20 while a 30-file --fix writes, on a loaded disk, the
link waiting on the journal) leaves ``.NAME.PID.N.tmp`` beside the file: the next rewrite of that
file removes those whose process is gone.

Refused, with a message (``OSError``): a read-only file (its mode says it is not to be edited, and a
rename would edit it anyway), a file with other hard links (a rename would leave them the old
text; ruff 0.17 writes through the shared inode in place, which a kill can leave half written) and
a file whose owner or group cannot be kept.
"""

from __future__ import annotations

import contextlib
import os
import stat


def write_atomic(path: str, data: bytes) -> None:
    """Replace the file at ``path`` (through symlinks: their target) with ``data``."""
    target = os.path.realpath(path)
    st = os.stat(target)
    _check(st)
    folder = os.path.dirname(target)
    _remove_left_over(target)
    fd, temporary = _unnamed(folder, target)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            _keep_owner(handle.fileno(), st)
            os.fchmod(handle.fileno(), stat.S_IMODE(st.st_mode))
            os.fsync(handle.fileno())
            if temporary is None:
                temporary = _name(handle.fileno(), target)
            os.replace(temporary, target)  # at once: the name exists no longer than it must
    except BaseException:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        raise


def _check(st: os.stat_result) -> None:
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise PermissionError(13, "the file is read-only (not rewritten)")
    if st.st_nlink > 1:
        raise OSError(31, f"the file has {st.st_nlink} hard links (a rewrite would leave the others the old text)")


def _unnamed(folder: str, target: str) -> tuple[int, str | None]:
    """A file to write the new text to: unnamed where the system allows it, else named."""
    if hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # a filesystem without O_TMPFILE support
            return os.open(folder, os.O_TMPFILE | os.O_WRONLY, 0o600), None
    import tempfile  # here, not at the top: a run without fixes never needs it

    fd, temporary = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(target)}.", suffix=".tmp")
    return fd, temporary


def _name(fd: int, target: str) -> str:
    """Give the unnamed file a name beside ``target``, to rename it over ``target`` at once."""
    name = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.{os.getpid()}.{fd}.tmp")
    # linkat(AT_SYMLINK_FOLLOW) of /proc/self/fd/N, the unprivileged way to name an O_TMPFILE file;
    # a folder descriptor makes Python call linkat (a plain path calls link(), which fails with EXDEV).
    fds = os.open("/proc/self/fd", os.O_RDONLY)
    try:
        os.link(str(fd), name, src_dir_fd=fds, follow_symlinks=True)
    finally:
        os.close(fds)
    return name


def _remove_left_over(target: str) -> None:
    """Remove the temporary files of ``target`` that a killed run left (see the module's text)."""
    prefix = f".{os.path.basename(target)}."
    with contextlib.suppress(OSError):
        for entry in os.scandir(os.path.dirname(target)):
            pid, _, rest = entry.name[len(prefix) :].partition(".")
            if (
                entry.name.startswith(prefix)
                and pid.isdigit()
                and rest.endswith(".tmp")
                and rest[:-4].isdigit()
                and not _alive(int(pid))
            ):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's: alive
        return True
    return True


def _keep_owner(fd: int, st: os.stat_result) -> None:
    """The new file is the runner's: give it the old one's owner and group (root fixing a user's
    file, a group-shared tree), or refuse when that is not allowed."""
    if not hasattr(os, "fchown"):
        return
    now = os.fstat(fd)
    if (now.st_uid, now.st_gid) != (st.st_uid, st.st_gid):
        try:
            os.fchown(fd, st.st_uid, st.st_gid)
        except PermissionError:
            raise PermissionError(1, "cannot keep the file's owner and group (not rewritten)") from None
