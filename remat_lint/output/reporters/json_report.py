"""``json`` and ``json-lines``: ruff-compatible objects (1-based rows and columns).

``message`` is the first sentence, short as ruff's are (tools that read ruff's JSON show it as a
one-line title); ``detail`` holds the rest, the measured explanation, or null. ``related`` lists the
other places the finding depends on (the wrap a call breaks, in another module)."""

from __future__ import annotations

import json
from typing import Any

from remat_lint.findings import Finding, Position
from remat_lint.registry import rule_info


def _loc(p: Position) -> dict[str, int]:
    return {"row": p.row, "column": p.column + 1}


def finding_to_dict(f: Finding) -> dict[str, Any]:
    rule = rule_info(f.code)
    return {
        "code": f.code,
        "name": f.name,
        "severity": f.severity.value,
        "message": f.title,
        "detail": f.why or None,
        "filename": f.path,
        "cell": f.cell,  # in a notebook (rows then count within the cell), as ruff writes it
        "location": _loc(f.start),
        "end_location": _loc(f.end),
        "noqa_row": f.start.row,
        "fix": None
        if f.fix is None
        else {
            "applicability": f.fix.applicability.value,
            "message": f.fix.message,
            "edits": [
                {"content": e.content, "location": _loc(e.start), "end_location": _loc(e.end)} for e in f.fix.edits
            ],
        },
        "related": [{"filename": r.path, "location": _loc(r.start), "message": r.message} for r in f.related],
        "url": rule.url if rule is not None else None,
        "trace": f.trace.to_json() if f.trace is not None else None,
    }


def json_array(findings: list[Finding], sources: dict[str, str]) -> str:
    return json.dumps([finding_to_dict(f) for f in findings], indent=2) + "\n"


def json_lines(findings: list[Finding], sources: dict[str, str]) -> str:
    return "".join(json.dumps(finding_to_dict(f)) + "\n" for f in findings)
