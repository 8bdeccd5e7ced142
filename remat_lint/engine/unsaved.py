"""Texts of files that are not on disk: what stdin gave, what flake8 read, a fix made in memory, an
editor's open buffers. A project pass (runner.py) and the project model it builds
(project/model.py) read a file here first, then on disk, whether the file is linted or only
read for its facts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass
class Unsaved:
    texts: dict[str, str] = field(default_factory=dict)  # real path -> text

    @classmethod
    def of(cls, texts: Mapping[str, str]) -> Unsaved:
        unsaved = cls()
        for path, text in texts.items():
            unsaved.put(path, text)
        return unsaved

    def put(self, path: str, text: str) -> None:
        """Read ``text`` as the file ``path``'s from now on."""
        self.texts[os.path.realpath(path)] = text

    def drop(self, path: str) -> None:
        """Read the file ``path`` from the disk again (an editor closed it)."""
        self.texts.pop(os.path.realpath(path), None)

    def get(self, real: str) -> str | None:
        """The text of the file at the real path ``real``; None: read the disk."""
        return self.texts.get(real)
