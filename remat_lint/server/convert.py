"""Findings as the Language Server Protocol shows them: diagnostics, code actions, hovers.

Positions: findings count rows from 1 and columns in code points; LSP counts both from 0 and
columns in the negotiated encoding (UTF-16 unless the client offers another), which pygls's
position codec converts.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from remat_lint.engine.results import PARSE_ERROR
from remat_lint.findings import Applicability, Finding, Position, Severity, TextEdit
from remat_lint.output.autofix import applicable
from remat_lint.output.noqa import NOQA_INLINE, noqa_edits
from remat_lint.registry import rule_info

SOURCE = "remat-lint"
FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.{SOURCE}"  # source.fixAll.remat-lint

_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}
# Editors fade "unnecessary" code and strike "deprecated" code through.
_TAGS = {
    "REM005": types.DiagnosticTag.Deprecated,  # removed-api: an API or keyword JAX removed
    "REM104": types.DiagnosticTag.Unnecessary,  # noop-policy: the checkpoint saves everything, recomputes nothing
    "REM105": types.DiagnosticTag.Unnecessary,  # trivial-custom-policy: the policy is a constant
}
_CODE = re.compile(r"[A-Z]+[0-9]+")


def to_range(lines: Sequence[str], codec: PositionCodec, start: Position, end: Position) -> types.Range:
    finding_range = types.Range(types.Position(start.row - 1, start.column), types.Position(end.row - 1, end.column))
    return codec.range_to_client_units(lines, finding_range)


def diagnostic(finding: Finding, lines: Sequence[str], codec: PositionCodec, uri: str) -> types.Diagnostic:
    info = rule_info(finding.code)
    return types.Diagnostic(
        range=to_range(lines, codec, finding.start, finding.end),
        message=finding.message,
        severity=_SEVERITY[finding.severity],
        code=finding.code,
        code_description=types.CodeDescription(href=info.url) if info is not None else None,
        source=SOURCE,
        tags=[_TAGS[finding.code]] if finding.code in _TAGS else None,
        related_information=related_information(finding, uri) or None,
    )


def related_information(finding: Finding, uri: str) -> list[types.DiagnosticRelatedInformation]:
    """The other places of a cross-module finding (the wrap a call breaks), one entry each. Their
    columns are code points: the other file's text is not at hand to count UTF-16 units, and the
    place is shown as a link to its line."""
    return [
        types.DiagnosticRelatedInformation(
            location=types.Location(
                uri=uri if related.path == finding.path else Path(os.path.abspath(related.path)).as_uri(),
                range=types.Range(
                    types.Position(related.start.row - 1, related.start.column),
                    types.Position(related.start.row - 1, related.start.column),
                ),
            ),
            message=related.message,
        )
        for related in finding.related
    ]


def fix_action(
    finding: Finding, uri: str, lines: Sequence[str], codec: PositionCodec, diag: types.Diagnostic
) -> types.CodeAction | None:
    if finding.fix is None or not applicable(finding, unsafe=True):
        return None
    unsafe = finding.fix.applicability is Applicability.UNSAFE
    title = f"{finding.code}: {finding.fix.message}" + (" (unsafe fix)" if unsafe else "")
    return types.CodeAction(
        title=title,
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diag],
        is_preferred=not unsafe,
        edit=workspace_edit(uri, lines, codec, finding.fix.edits),
    )


def noqa_action(
    finding: Finding, uri: str, source: str, lines: Sequence[str], codec: PositionCodec, diag: types.Diagnostic
) -> types.CodeAction | None:
    if finding.code == PARSE_ERROR:  # nothing to suppress: the file does not parse
        return None
    edits = noqa_edits(source, {finding.start.row: {finding.code}})
    if not edits:
        return None
    return types.CodeAction(
        title=f"{finding.code}: add `# noqa: {finding.code}`",
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diag],
        edit=workspace_edit(uri, lines, codec, edits),
    )


def whole_document_action(
    uri: str, lines: Sequence[str], codec: PositionCodec, fixed: str, title: str, kind: str
) -> types.CodeAction:
    end = Position(len(lines) + 1, 0)
    return types.CodeAction(
        title=title, kind=kind, edit=workspace_edit(uri, lines, codec, [TextEdit(Position(1, 0), end, fixed)])
    )


def workspace_edit(
    uri: str, lines: Sequence[str], codec: PositionCodec, edits: tuple[TextEdit, ...] | list[TextEdit]
) -> types.WorkspaceEdit:
    return types.WorkspaceEdit(
        changes={uri: [types.TextEdit(to_range(lines, codec, e.start, e.end), e.content) for e in edits]}
    )


def noqa_hover(line: str, column: int) -> str | None:
    """The title of the rule whose code is under the cursor in a ``# noqa: REMnnn`` comment."""
    match = NOQA_INLINE.search(line)
    if match is None or match.group("codes") is None or not match.start("codes") <= column <= match.end("codes"):
        return None
    for code in _CODE.finditer(line, match.start("codes"), match.end("codes")):
        if code.start() <= column <= code.end():
            info = rule_info(code.group())
            return (
                None
                if info is None
                else f"**{info.code}** `{info.name}`: {info.summary}\n\n[Documentation]({info.url})"
            )
    return None
