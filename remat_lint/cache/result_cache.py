"""Content-hash result cache: a file whose bytes, rules and settings did not change is not re-linted.

An entry holds one file's findings *and* its project-wide facts (REM008), before the project
pass, so the project pass still sees every file on a warm run. The key covers the file's bytes,
the remat-lint version and the code of the installed package (an edited rule invalidates the
cache even without a version bump), the Python version (the prefilter parses with ``ast``) and
what the result depends on: the codes linted in this file, those whose facts are collected and
whether it counts as a test file.
The path is not part of the key: a moved file still hits.

Each entry is authenticated with the user's secret (``replay.secret``) and checked before it is
unpickled, and a cache folder that is not the user's or that others may write to is not used: an
entry committed to a repository, or made by another user, is never read (docs/cache.md).
Entries are written to a temporary file and renamed into place, so concurrent runs and a run
killed halfway never leave a torn entry; an unreadable entry is a miss. The cache is an
optimisation only: any OS error disables it for the run. Entries live under a directory per
linter fingerprint; a new one removes the others that have not been used for an hour.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import time
from pathlib import Path

from remat_lint import __version__
from remat_lint.cache import replay
from remat_lint.engine.results import FileResult

DEFAULT_DIR = replay.CACHE_DIR  # one name: the launcher looks for replay records there
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# remat-lint's result cache (https://bford.info/cachedir/)\n"


def folder(settings_root: Path, configured: str | None, named: str | None = None) -> Path:
    """The cache folder, as ruff's: ``named`` (--cache-dir), else $REMAT_LINT_CACHE_DIR (both from
    the working directory), else the configuration's cache-dir, else DEFAULT_DIR (both from the
    project's root)."""
    named = named or os.environ.get(replay.CACHE_DIR_VARIABLE)
    return Path(os.path.abspath(named)) if named else settings_root / (configured or DEFAULT_DIR)


def code_paths() -> list[tuple[str, str]]:
    """The linter's own code: every folder of its packages and every .py file in them, each with
    the package folder it is under."""
    import remat_lint
    import remat_lint.rules

    found = []
    for package in (remat_lint, remat_lint.rules):
        for directory in package.__path__:
            for root, dirs, files in os.walk(directory):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                found.append((directory, root))
                found += [(directory, os.path.join(root, name)) for name in sorted(files) if name.endswith(".py")]
    return found


def code_fingerprint() -> str:
    """What identifies the linter itself: version, Python version and the package's source files."""
    parts = [__version__, sys.version.split()[0]]
    for directory, path in code_paths():
        if path.endswith(".py"):
            st = os.stat(path)
            parts.append(f"{os.path.relpath(path, directory)}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


class Cache:
    def __init__(self, directory: str | Path) -> None:
        self.root = Path(directory)
        self.directory = self.root / code_fingerprint()
        self.secret = replay.secret(create=True)
        self.enabled = self.secret is not None and (not os.path.lexists(self.root) or replay.trusted(str(self.root)))

    def key(self, data: bytes, codes: frozenset[str], is_test_file: bool, facts: frozenset[str] = frozenset()) -> str:
        digest = hashlib.sha256(data)
        digest.update(f"\0{','.join(sorted(codes))}\0{is_test_file}\0{','.join(sorted(facts))}".encode())
        return digest.hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / key

    def get(self, key: str, path: str) -> FileResult | None:
        result = self.load(key)
        if not isinstance(result, FileResult):
            return None
        result.path = path
        for finding in [*result.findings, *(c.finding for c in [*result.candidates, *result.suppressed_candidates])]:
            finding.path = path
        return result

    def load(self, key: str) -> object | None:
        """The value stored under ``key``; None when there is none or it is not this user's."""
        if not self.enabled:
            return None
        try:
            with open(self._path(key), "rb") as handle:
                data = handle.read()
            if not replay.compare_digest(self._tag(key, data[replay.TAG_BYTES :]), data[: replay.TAG_BYTES]):
                return None  # not written by this user's linter: never unpickled
            value: object = pickle.loads(data[replay.TAG_BYTES :])
            return value
        except FileNotFoundError:
            return None
        except Exception:  # a corrupt or foreign entry is a miss
            return None

    def _tag(self, key: str, payload: bytes) -> bytes:
        assert self.secret is not None  # an enabled cache has one
        return replay.tag(self.secret, key.encode() + b"\0" + payload)

    def _prune(self) -> None:
        """Remove the entries of other remat-lint versions (or edits of it) unused for an hour."""
        import re
        import shutil

        cutoff = time.time() - 3600
        for other in self.root.iterdir():
            try:
                if (
                    other != self.directory
                    and re.fullmatch(r"[0-9a-f]{16}", other.name)
                    and other.stat().st_mtime < cutoff
                ):
                    shutil.rmtree(other, ignore_errors=True)
            except OSError:
                pass

    def put(self, key: str, result: FileResult) -> None:
        self.store(key, result)

    def store(self, key: str, value: object) -> None:
        """Keep ``value`` under ``key`` (replacing what was there)."""
        if not self.enabled:
            return
        target = self._path(key)
        try:
            if not self.root.exists():
                self.root.mkdir(parents=True, exist_ok=True)
                (self.root / "CACHEDIR.TAG").write_text(_TAG)
                (self.root / ".gitignore").write_text("# Created by remat-lint\n*\n")
            if not self.directory.exists():
                self.directory.mkdir()
                self._prune()
            target.parent.mkdir(parents=True, exist_ok=True)
            import tempfile  # here, not at the top: a warm run writes nothing

            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
            try:
                payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(fd, "wb") as handle:
                    handle.write(self._tag(key, payload) + payload)
                os.replace(tmp, target)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            self.enabled = False
