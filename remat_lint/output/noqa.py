"""``# noqa`` with flake8's semantics, so the CLI and ``flake8 --select=REM`` suppress the same findings.

An inline ``# noqa[: CODES]`` anywhere on a logical line covers every physical line of it
(flake8's ``_noqa_line_mapping``); codes match exactly or as prefixes. ruff's spellings count
too: ``#noqa``, ``# NOQA``, ``#noqa:REM001``; flake8 does not see ``#noqa`` without its space, so
the flake8 plugin applies those itself (``Suppressions.unseen_by_flake8``). ``# remat-lint: noqa``
(optionally ``: CODES``) on a line of its own suppresses the whole file, and so does flake8's
``# flake8: noqa`` at the start of a line (flake8 then skips the file).
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

from remat_lint.findings import Position, TextEdit

# flake8's NOQA_INLINE_REGEXP, verbatim: what flake8 applies itself.
FLAKE8_INLINE = re.compile(r"# noqa(?::[\s]?(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?", re.IGNORECASE)
# The CLI's: flake8's, with ruff's spellings (no space after ``#``, spaces after ``:``).
NOQA_INLINE = re.compile(r"#[ \t]*noqa(?::[ \t]*(?P<codes>([A-Z]+[0-9]+(?:[,\s]+)?)+))?", re.IGNORECASE)
NOQA_FILE = re.compile(
    r"^\s*#\s*remat-lint:\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]*(?:[,\s]+[A-Z]+[0-9]*)*))?\s*$", re.I | re.M
)
# flake8's NOQA_FILE, verbatim: a line that starts with it makes flake8 skip the whole file (codes
# after it are not read), so the CLI skips it too.
FLAKE8_FILE = re.compile(r"\s*# flake8[:=]\s*noqa", re.I)
_CODE_SPLIT = re.compile(r"[,\s]+")

ALL = None  # a blanket suppression
UNUSED_NOQA = "REM100"  # the rule whose fixes edit directives (rules/rem100_unused_noqa.py)


def _codes(text: str | None, fold: bool = True) -> frozenset[str] | None:
    """The codes a suppression names; inline codes keep their case (flake8 compares them as written,
    so ``# noqa: rem001`` suppresses nothing there, and must not here either)."""
    if text is None:
        return ALL
    return frozenset(code.upper() if fold else code for code in _CODE_SPLIT.split(text) if code)


def split_codes(text: str | None) -> list[str]:
    """The codes of an inline directive as written, in order (none for a blanket ``# noqa``)."""
    return [code for code in _CODE_SPLIT.split(text or "") if code]


def _matches(code: str, codes: frozenset[str] | None) -> bool:
    return codes is ALL or code in codes or code.startswith(tuple(codes))


@dataclass(frozen=True)
class Directive:
    """An inline ``# noqa``: where it is written and the rows it covers."""

    row: int
    match: re.Match[str]  # of NOQA_INLINE in the row's line
    rows: range
    seen_by_flake8: bool


@dataclass
class Suppressions:
    file_codes: list[frozenset[str] | None]
    line_codes: dict[int, frozenset[str] | None]
    directives: list[Directive] = field(default_factory=list)

    @classmethod
    def parse(cls, source: str) -> "Suppressions":
        file_codes = [_codes(m.group("codes")) for m in NOQA_FILE.finditer(source)] if "remat-lint" in source else []
        if "flake8" in source.lower() and any(FLAKE8_FILE.match(line) for line in source.splitlines()):
            file_codes.append(ALL)
        directives = _inline(source) if "noqa" in source.lower() else []
        line_codes = {row: _codes(d.match.group("codes"), fold=False) for d in directives for row in d.rows}
        return cls(file_codes, line_codes, directives)

    def unseen_by_flake8(self, code: str, row: int) -> bool:
        """Whether an inline directive that flake8 does not recognise (``#noqa``) suppresses ``code`` on ``row``."""
        return any(row in d.rows and not d.seen_by_flake8 for d in self.directives) and self.suppresses(code, row)

    def file_suppresses(self, code: str) -> bool:
        return any(_matches(code, codes) for codes in self.file_codes)

    def suppresses(self, code: str, row: int) -> bool:
        if self.file_suppresses(code):
            return True
        return row in self.line_codes and _matches(code, self.line_codes[row])

    def has_noqa(self, row: int) -> bool:
        return row in self.line_codes


def _inline(source: str) -> list[Directive]:
    """The first directive of each logical line (flake8 reads only that one); a comment cannot
    span lines, so each physical line is searched alone."""
    lines = source.splitlines()
    directives = []
    for first, last in token_lines(source):
        for row in range(first, min(last, len(lines)) + 1):
            match = NOQA_INLINE.search(lines[row - 1])
            if match is not None:
                seen = any(FLAKE8_INLINE.search(lines[r - 1]) for r in range(first, min(last, len(lines)) + 1))
                directives.append(Directive(row, match, range(first, last + 1), seen))
                break
    return directives


def token_lines(source: str) -> list[tuple[int, int]]:
    """flake8's noqa ranges (first row, last row): the physical lines up to each NL or NEWLINE
    token, so a multi-line string is one range and each line of a bracketed call its own."""
    spans: list[tuple[int, int]] = []
    rows = len(source.splitlines())
    first, last = rows + 2, -1
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type in (tokenize.ENDMARKER, tokenize.DEDENT):
                continue
            first, last = min(first, tok.start[0]), max(last, tok.end[0])
            if tok.type in (tokenize.NL, tokenize.NEWLINE):
                spans.append((first, last))
                first, last = rows + 2, -1
    except (tokenize.TokenError, SyntaxError):
        # Same fallback as flake8 would give up on; physical lines still work.
        spans.extend((row, row) for row in range(1, rows + 1))
    return spans


def noqa_edits(source: str, codes_by_row: dict[int, set[str]]) -> list[TextEdit]:
    """``--add-noqa`` (ruff's semantics): edits that make a ``# noqa`` cover each code on its row.

    Codes join a ``# noqa`` comment already in the row's noqa range (a blanket one covers
    everything); without one, the comment goes on the range's last line, after a multi-line
    string, never inside it. Text in strings is never edited."""
    lines = source.splitlines()
    span_of = {row: (first, last) for first, last in token_lines(source) for row in range(first, last + 1)}
    comments = _comment_columns(source)
    wanted: dict[int, set[str]] = {}
    for row, codes in codes_by_row.items():
        first, last = span_of.get(row, (row, row))
        noqa = [r for r in range(first, last + 1) if r in comments and NOQA_INLINE.search(lines[r - 1], comments[r])]
        wanted.setdefault(noqa[0] if noqa else last, set()).update(codes)
    edits = []
    for row, codes in sorted(wanted.items()):
        if not 0 < row <= len(lines):
            continue
        line = lines[row - 1]
        match = NOQA_INLINE.search(line, comments[row]) if row in comments else None
        if match is None:
            edits.append(
                TextEdit(Position(row, len(line)), Position(row, len(line)), f"  # noqa: {', '.join(sorted(codes))}")
            )
        elif match.group("codes") is not None:
            existing = [code for code in _CODE_SPLIT.split(match.group("codes")) if code]
            merged = existing + sorted(codes - set(existing))
            end = match.start("codes") + len(match.group("codes").rstrip(", \t"))
            edits.append(TextEdit(Position(row, match.start()), Position(row, end), f"# noqa: {', '.join(merged)}"))
    return edits


def _comment_columns(source: str) -> dict[int, int]:
    """Row -> column where the row's comment starts (tokenize's COMMENT tokens)."""
    try:
        return {
            tok.start[0]: tok.start[1]
            for tok in tokenize.generate_tokens(io.StringIO(source).readline)
            if tok.type == tokenize.COMMENT
        }
    except (tokenize.TokenError, SyntaxError):
        return {}
