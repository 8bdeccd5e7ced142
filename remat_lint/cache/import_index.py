"""What a file linted alone needs of each project file it imports, kept from run to run: the
dotted names the file imports and whether it may export a wrap (``project/imports.py``,
``project/exports.py``), by the file's stat signature (inode, size, modification and change
times), so that a warm run that cannot replay stats the import closure instead of reading and
scanning it (179 files, 101k lines for a MaxText trainer).

One entry per project root and rules' export words, in the result cache's folder (authenticated
like its entries; a new linter version starts afresh). A file changed within ``RACY_NS`` of the
run is not kept: a change to come could keep its signature. A file whose facts come from here was
not opened, so a recorded run notes it as read (``recording.noted_read``): the replay record
then holds its signature, and an edit of it stops the replay.
"""

from __future__ import annotations

import hashlib
import time
from typing import Callable, Generic, TypeVar

from remat_lint.cache import recording, replay
from remat_lint.cache.result_cache import Cache

T = TypeVar("T")


class ImportIndex(Generic[T]):
    """Facts of files (``project.imports.ImportFacts``) by their paths and signatures."""

    def __init__(self, cache: Cache, root: str, exports: list[tuple[str, ...]]) -> None:
        self.cache = cache
        self.key = hashlib.sha256(f"imports\0{root}\0{sorted(exports)}".encode()).hexdigest()
        stored = cache.load(self.key)
        self.entries: dict[str, tuple[replay.Signature, T]] = stored if isinstance(stored, dict) else {}
        self.changed = False
        self.start_ns = time.time_ns()

    def facts(self, path: str, read: Callable[[str], bytes | None], compute: Callable[[bytes], T]) -> T | None:
        """The facts of the file ``path``: the kept ones when its signature did not change, else
        ``compute`` of what ``read`` gives (None when it cannot read it). The signature is taken
        before the read: a change between them is seen by the next run."""
        signature = replay.signature(path)
        kept = self.entries.get(path)
        if signature is not None and kept is not None and kept[0] == signature:
            recording.noted_read(path)
            return kept[1]
        data = read(path)
        if data is None:
            return None
        facts = compute(data)
        if signature is not None and signature != replay.UNKNOWN and not recording.racy(signature, self.start_ns):
            self.entries[path] = (signature, facts)
            self.changed = True
        return facts

    def save(self) -> None:
        if self.changed:
            self.cache.store(self.key, self.entries)
            self.changed = False
