"""Which modules that a linted file imports may export a wrap whose calls the file makes, told
from the text alone (no parse): a rule that reports at calls (REM012, REM016) declares the words
a module's top-level code names wherever it binds such a wrap to a module-level name
(``Rule.export_words``).

A file linted alone reads what it imports, transitively (``imports.py``): on MaxText, 180 files
for a trainer, 34 of which name a remat API (36k lines a libcst parse would cost), none holding
such a wrap. A word counts where it is outside the body and the signature of a def or class
(``static_argnums`` of a ``jax.jit`` or of an ``nn.remat`` inside ``__call__`` exports nothing):
in the statement of the last unindented line before it, unless that line opens a def or a class.
Over-approximated, never under: a decorator's line opens no def; an unindented line inside a
string or a bracket counts as a statement, so a word after it counts.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import Iterable

# A statement at module level starts on such a line (a closing bracket continues one: ``):``).
_UNINDENTED = re.compile(rb"^[^\s#)\]}]", re.M)
_DEF_OR_CLASS = re.compile(rb"(?:async\s+)?(?:def|class)\b")
_STAR = re.compile(r"^[ \t]*from[ \t]+[\w.]+[ \t]+import[ \t]*\*", re.M)


def may_export(source: bytes, needs: Iterable[tuple[str, ...]]) -> bool:
    """Whether ``source`` (a file's bytes, searched for each word's UTF-8 without decoding them)
    names outside def and class bodies every word of one of ``needs`` (each rule's
    ``export_words``; an empty one: always)."""
    starts: list[int] = []  # of the unindented lines, found at the first word
    for words in needs:
        encoded = [word.encode() for word in words]
        if all(word in source for word in encoded):
            starts = starts or [m.start() for m in _UNINDENTED.finditer(source)]
            if all(_at_top_level(source, word, starts) for word in encoded):
                return True
    return False


def reexports_all(text: str) -> bool:
    """``text`` holds a star import (``from .layers import *``), which binds whatever the other
    module exports, a wrap's name among them: such a module names every symbol (a line in a
    string counts too)."""
    return _STAR.search(text) is not None


def _at_top_level(source: bytes, word: bytes, starts: list[int]) -> bool:
    index = source.find(word)
    while index != -1:
        line = bisect_right(starts, index) - 1
        if line < 0 or not _DEF_OR_CLASS.match(source, starts[line]):
            return True
        index = source.find(word, index + len(word))
    return False
