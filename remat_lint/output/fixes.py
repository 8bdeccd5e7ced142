"""Applying fixes to source text: non-overlapping edits, applied back to front."""

from __future__ import annotations

from typing import Iterable

from remat_lint.findings import Finding, Position, TextEdit


def _offsets(text: str) -> list[int]:
    """Offset of the start of each 1-based row (index 0 unused), plus one past the end."""
    starts = [0, 0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    starts.append(len(text))
    return starts


def _offset(starts: list[int], p: Position) -> int:
    if p.row >= len(starts) - 1:
        return starts[-1]
    return starts[p.row] + p.column


def apply_edits(text: str, edits: Iterable[TextEdit]) -> str:
    starts = _offsets(text)
    spans = sorted(((_offset(starts, e.start), _offset(starts, e.end), e.content) for e in edits), reverse=True)
    for begin, end, content in spans:
        text = text[:begin] + content + text[end:]
    return text


def non_overlapping(findings: Iterable[Finding]) -> list[Finding]:
    """Findings whose fixes can be applied together: the first of any overlapping pair wins.

    Two insertions at the same point (the same import added twice) count as overlapping, so
    the rest is applied on the next pass, after a re-lint.
    """
    chosen: list[Finding] = []
    taken: list[tuple[Position, Position]] = []
    for finding in findings:
        if finding.fix is None:
            continue
        spans = [(e.start, e.end) for e in finding.fix.edits]
        if any(a_start <= b_end and b_start <= a_end for a_start, a_end in spans for b_start, b_end in taken):
            continue
        chosen.append(finding)
        taken.extend(spans)
    return chosen
