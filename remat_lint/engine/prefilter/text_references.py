"""Prefilter stage 3 from the text: the ``ast`` check's rejections that need no parse.

Stage 3 (stages.py) parses a file with ``ast`` to learn whether a name holding an API token
could resolve to an API. On the installed jax+flax, 39 files pass the word search and 31 of them
(42k of 53k lines) are rejected: the token occurs only in comments and strings, or on names bound
to modules that hold no API (``from jax._src.interpreters import remat``). That parse was a
quarter of a cold run. This module reaches the same rejections from the text, as an
over-approximation of the ``ast`` check, and answers None (parse it) whenever the text leaves a
doubt:

- one regular expression finds the comments and strings; the text between them must hold no
  quote (so the scan never lost step: a file Python cannot parse is left to ``ast``), and an
  f-string or t-string whose braces do not balance (a quote nested inside it, Python 3.12) leaves
  a doubt; its replacement fields count as code (all of it when a field holds a quote, a comment
  or a backslash);
- every ``import`` word in the code must be part of an import statement read here (one logical
  line at the start of a physical line, parenthesised lists allowed); ``import *`` is never read;
- a token occurrence in the code is a use whose root is the first name of its dotted chain
  (``jax.checkpoint``: ``jax``; comments and line breaks may sit between); a root that is a
  call, subscript or literal is no name, as for the semantic model;
- a root counts as assigned (the semantic model may follow it) unless each of its occurrences
  in the code outside the imports is an attribute (``x.name``) or is followed at once by ``.``,
  ``(`` or ``[`` (a name being bound is never followed by those).
"""

from __future__ import annotations

import bisect
import re
from typing import Callable

_IDENT = r"[^\W\d]\w*"
_DOTTED = rf"{_IDENT}(?:[ \t]*\.[ \t]*{_IDENT})*"
_ALIAS = rf"{_DOTTED}(?:[ \t]+as[ \t]+{_IDENT})?"
_COMMENT = r"#[^\n]*"
_SPACE = rf"(?:[ \t\r\n]|{_COMMENT})*"
_LIST = rf"{_ALIAS}(?:[ \t]*,[ \t]*{_ALIAS})*"
_PAREN_LIST = rf"\({_SPACE}{_ALIAS}(?:{_SPACE},{_SPACE}{_ALIAS})*{_SPACE},?{_SPACE}\)"
_IMPORT = re.compile(
    rf"^[ \t]*(?:from[ \t]+(?P<module>\.*[ \t]*(?:{_DOTTED})?)[ \t]+import[ \t]*(?P<names>{_PAREN_LIST}|[ \t]{_LIST})"
    rf"|import[ \t]+(?P<modules>{_LIST}))[ \t]*(?:{_COMMENT})?\r?$",
    re.MULTILINE,
)
# Comments and string literals (a backslash escapes any character, a line break included).
_LITERAL = re.compile(
    r"""(?=[#'"rRbBuUfFtT])(?:#[^\r\n]*|(?:(?<!\w)(?P<prefix>[rRbBuUfFtT]{1,2}))?(?:"""
    r"""'''[^'\\]*(?:(?:\\[\s\S]|'(?!''))[^'\\]*)*'''"""
    r'''|"""[^"\\]*(?:(?:\\[\s\S]|"(?!""))[^"\\]*)*"""'''
    r"""|'[^'\\\r\n]*(?:\\[\s\S][^'\\\r\n]*)*'"""
    r"""|"[^"\\\r\n]*(?:\\[\s\S][^"\\\r\n]*)*"))"""
)
_CLOSERS = frozenset(")]}'\"")


class TextReferences:
    """What the text of a module tells about its imports; ``ok`` is False when it cannot stand
    for the parse."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.imported: list[str] = []  # every imported dotted name, as prefilter._References has them
        self.imports: dict[str, list[str]] = {}  # name -> qualified names it is imported as
        self.ok = True
        # Spans of comments and plain strings (their words are no code), sorted, flattened.
        self._skipped: list[int] = []
        self._imports: list[int] = []  # spans of the import statements read, flattened
        code_end = 0
        for match in _LITERAL.finditer(source):
            start, end = match.span()
            if "'" in source[code_end:start] or '"' in source[code_end:start]:
                self.ok = False  # a quote outside any literal: the scan lost step
                return
            code_end = end
            prefix = (match["prefix"] or "").lower()
            if "f" in prefix or "t" in prefix:
                body = source[start:end]
                if body.count("{") != body.count("}"):
                    self.ok = False  # a quote nested in a replacement field (Python 3.12)
                    return
                self._skipped += _literal_parts(source, start, end)  # what a replacement field holds is code
                continue
            self._skipped += (start, end)
        if "'" in source[code_end:] or '"' in source[code_end:]:
            self.ok = False
            return
        for match in _IMPORT.finditer(source):
            if self._in(self._skipped, match.start()):
                continue  # inside a string
            self._imports += match.span()
            self._read_import(match)
        self.ok = all(self._in(self._imports, i) for i in self._code_occurrences("import"))

    def _read_import(self, match: re.Match[str]) -> None:
        if match["modules"] is not None:
            for alias in _aliases(match["modules"]):
                name, _, asname = alias.partition(" as ")
                self.imported.append(name)
                bound = asname or name.split(".")[0]
                self.imports.setdefault(bound, []).append(name if asname else bound)
            return
        module = match["module"].replace(" ", "").replace("\t", "")
        for alias in _aliases(match["names"].strip("()")):
            name, _, asname = alias.partition(" as ")
            self.imported.append(f"{module}.{name}")
            self.imports.setdefault(asname or name, []).append(f"{module}.{name}")

    @staticmethod
    def _in(spans: list[int], index: int) -> bool:
        return bisect.bisect_right(spans, index) % 2 == 1

    def _code_occurrences(self, word: str) -> list[int]:
        """Where ``word`` occurs as a whole word in the code (not in comments or plain strings)."""
        found = []
        source = self.source
        i = source.find(word)
        while i != -1:
            end = i + len(word)
            if (not i or not _word_char(source[i - 1])) and (end == len(source) or not _word_char(source[end])):
                if not self._in(self._skipped, i):
                    found.append(i)
            i = source.find(word, end)
        return found

    def may_reference(
        self, tokens: frozenset[str], imported_api: Callable[[str], bool], related: Callable[[str], bool]
    ) -> bool | None:
        """False when no name holding one of ``tokens`` can resolve to an API: no imported dotted
        name is ``imported_api``, and no use's root is assigned or imported as a name that, with
        the use's attributes, is ``related``. None: the text leaves a doubt."""
        if not self.ok:
            return None
        if any(imported_api(q) for q in self.imported):
            return True
        unsure = False
        for token in tokens:
            for start in self._code_occurrences(token):
                if self._in(self._imports, start):
                    continue
                chain = self._chain(start, token)
                if chain is None:
                    unsure = True
                elif chain:
                    root, suffix = chain[0], "".join(f".{a}" for a in chain[1:])
                    if self._assigned(root) or any(related(q + suffix) for q in self.imports.get(root, ())):
                        return True
        return None if unsure else False

    def _assigned(self, name: str) -> bool:
        """Whether ``name`` may be bound other than by an import (see the module's docstring)."""
        source = self.source
        for start in self._code_occurrences(name):
            end = start + len(name)
            if self._in(self._imports, start) or (start and source[start - 1] == "."):
                continue
            if end < len(source) and source[end] in ".([":
                continue
            return True
        return False

    def _chain(self, start: int, token: str) -> list[str] | None:
        """The names of the dotted chain ending with the occurrence of ``token`` at ``start``,
        root first; [] when its root is no name (a call, a subscript, a literal); None when the
        text cannot tell."""
        names = [token]
        while True:
            j = self._previous(start)
            if j < 0 or self.source[j] != ".":
                return names
            k = self._previous(j)
            if k < 0:
                return None
            if self.source[k] in _CLOSERS:
                return []
            end = k + 1
            while k >= 0 and _word_char(self.source[k]):
                k -= 1
            name = self.source[k + 1 : end]
            if not name:
                return None
            if not name.isidentifier():
                return [] if name[0].isdigit() else None
            names.insert(0, name)
            start = k + 1

    def _previous(self, i: int) -> int:
        """The last character of code before ``i``: past whitespace, backslashes before a line
        break and comments (-1 at the start)."""
        source = self.source
        j = i - 1
        while j >= 0:
            char = source[j]
            if char in " \t\f\r\n\\":
                j -= 1
            elif (at := bisect.bisect_right(self._skipped, j)) % 2 and source[self._skipped[at - 1]] == "#":
                j = self._skipped[at - 1] - 1  # a comment
            else:
                return j
        return -1


def _literal_parts(source: str, start: int, end: int) -> list[int]:
    """The spans, flattened, of an f- or t-string literal's text outside its replacement fields;
    none (all of it counts as code) when a field holds a quote, a comment or a backslash, whose
    braces could then be text, or when the braces do not nest."""
    spans, depth, i = [start], 0, start
    while i < end:
        char = source[i]
        if depth == 0 and source.startswith(("{{", "}}"), i):
            i += 2
            continue
        if char == "{":
            if depth == 0:
                spans.append(i)
            depth += 1
        elif char == "}":
            depth -= 1
            if depth < 0:
                return []
            if depth == 0:
                spans.append(i + 1)
        elif depth and char in "'\"#\\":
            return []
        i += 1
    return [*spans, end] if depth == 0 else []


def _word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _aliases(text: str) -> list[str]:
    """``a.b as c, d`` (comments, line breaks and a trailing comma allowed) -> ["a.b as c", "d"]."""
    text = re.sub(_COMMENT, "", text)
    parts = (" ".join(part.split()).replace(" .", ".").replace(". ", ".") for part in text.split(","))
    return [part for part in parts if part]
