"""Findings at the calls of another module's wrap: a rule that judges a wrap against the calls other
modules make of it (REM012, REM016) reports each wrong call where it is written, and names the wrap.

The summary keeps no rows for the calls (positions cost more than the parse on large statements);
a caller's text is read again with ``ast`` only when a finding lands on one of its calls.
"""

from __future__ import annotations

import ast
import os
from typing import TYPE_CHECKING

from remat_lint.findings import Finding, Position, RelatedLocation

if TYPE_CHECKING:
    from remat_lint.project.model import Project, ProjectModule
    from remat_lint.project.summary import ImportedCall


def call_spans(text: str, call: ImportedCall) -> list[tuple[Position, Position]]:
    """Where ``text`` makes a call like ``call`` (the same callee as written, number of positional
    arguments and keywords), in order; columns in code points, as findings count them."""
    try:
        tree = ast.parse(text)
        func = ast.dump(ast.parse(call.func, mode="eval").body)
    except (SyntaxError, ValueError, RecursionError):
        return []
    lines = text.splitlines()
    nodes = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and ast.dump(node.func) == func
        and len(node.args) == call.positional
        and tuple(k.arg for k in node.keywords) == call.keywords
    ]
    spans = []
    for node in nodes:
        end_row, end_col = node.end_lineno or node.lineno, node.end_col_offset or node.col_offset
        spans.append((_position(lines, node.lineno, node.col_offset), _position(lines, end_row, end_col)))
    return sorted(spans)


def _position(lines: list[str], row: int, utf8_column: int) -> Position:
    """``ast`` counts columns in UTF-8 bytes."""
    line = lines[row - 1] if 0 < row <= len(lines) else ""
    return Position(row, len(line.encode("utf-8")[:utf8_column].decode("utf-8", "replace")))


def distinct(calls: list[tuple[ProjectModule, ImportedCall]]) -> list[tuple[ProjectModule, ImportedCall]]:
    """``calls`` without repeats: a call written twice alike is one entry, and ``at_calls`` finds both places."""
    seen: set[tuple[str, ImportedCall]] = set()
    found = []
    for module, call in calls:
        if (module.path, call) not in seen:
            seen.add((module.path, call))
            found.append((module, call))
    return found


def at_calls(
    candidate: Finding, project: Project, module: ProjectModule, call: ImportedCall, message: str, wrap_note: str
) -> list[Finding]:
    """One finding with ``message`` at each place ``module`` writes ``call``; the candidate's place,
    the wrap, is named as a related location with ``wrap_note``."""
    from remat_lint.engine.sources import display_path

    wrap = RelatedLocation(display_path(candidate.path), candidate.start, wrap_note)
    return [
        Finding(candidate.code, candidate.name, candidate.severity, message, module.path, start, end, related=(wrap,))
        for start, end in call_spans(project.text(module), call)
    ]


def wrap_place(candidate: Finding, seen_from: ProjectModule) -> str:
    """The candidate's place (the wrap) as a message about ``seen_from``'s call names it: ``layers.py:18``."""
    return f"{os.path.relpath(candidate.path, os.path.dirname(seen_from.path))}:{candidate.start.row}"
