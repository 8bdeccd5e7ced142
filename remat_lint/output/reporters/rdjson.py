"""``rdjson``: the Reviewdog Diagnostic Format (``reviewdog -f=rdjson``), one ``DiagnosticResult``.

Positions are 1-based and, as the format defines them, columns count UTF-8 bytes (a code point
outside ASCII is several); the range's end is exclusive. A fix becomes ``suggestions``, which
reviewdog posts as suggested changes on a pull request.
"""

from __future__ import annotations

import json
from typing import Any

from remat_lint.findings import Finding, Position, Severity
from remat_lint.output.reporters import place, severity
from remat_lint.registry import rule_info

SOURCE = {"name": "remat-lint", "url": "https://github.com/remat-lint/remat-lint"}
SEVERITIES = {Severity.ERROR: "ERROR", Severity.WARNING: "WARNING", Severity.INFO: "INFO"}


def _position(p: Position, lines: list[str]) -> dict[str, int]:
    line = lines[p.row - 1] if 0 < p.row <= len(lines) else ""
    return {"line": p.row, "column": len(line[: p.column].encode("utf-8")) + 1}


def _range(start: Position, end: Position, lines: list[str]) -> dict[str, Any]:
    return {"start": _position(start, lines), "end": _position(end, lines)}


def diagnostic(f: Finding, lines: list[str]) -> dict[str, Any]:
    rule = rule_info(f.code)
    result: dict[str, Any] = {
        "message": f.title,
        "location": {"path": place(f), "range": _range(f.start, f.end, lines)},
        "severity": SEVERITIES[severity(f)],
        "code": {"value": f.code, **({"url": rule.url} if rule is not None else {})},
    }
    if f.fix is not None:
        result["suggestions"] = [{"range": _range(e.start, e.end, lines), "text": e.content} for e in f.fix.edits]
    return result


def rdjson(findings: list[Finding], sources: dict[str, str]) -> str:
    lines = {name: text.splitlines() for name, text in sources.items()}
    diagnostics = [diagnostic(f, lines.get(place(f), [])) for f in findings]
    return json.dumps({"source": SOURCE, "severity": "WARNING", "diagnostics": diagnostics}, indent=2) + "\n"
