"""``sarif``: SARIF 2.1.0 as GitHub code scanning accepts it (``github/codeql-action/upload-sarif``).

Paths are relative to the working directory (``%SRCROOT%``), regions 1-based with an exclusive
end column counted in code points, and every result carries a ``primaryLocationLineHash`` that
does not depend on its line number, so an alert survives lines being added above it.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

from remat_lint import __version__
from remat_lint.findings import Finding, Position, RelatedLocation, Severity, TextEdit
from remat_lint.output.noqa import UNUSED_NOQA
from remat_lint.output.reporters import fix_label, place
from remat_lint.registry import RuleInfo, rule_info

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/remat-lint/remat-lint"
SRCROOT = "%SRCROOT%"
MAX_DESCRIPTION = 1024  # GitHub's limit for short and full descriptions
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
PROBLEM_SEVERITY = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "recommendation"}
# REM0xx break at wrap or grad time, REM1xx waste memory or compute, REM2xx are wrong inside the
# checkpointed body, REM3xx are style; REM100 (unused noqa directives) is style too.
CATEGORIES = {"0": "correctness", "1": "performance", "2": "correctness", "3": "style", UNUSED_NOQA: "style"}


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 1].rstrip() + "…"


def _section(doc: str, title: str) -> str:
    match = re.search(rf"## {re.escape(title)}\s*\n(.+?)(?=\n## |\Z)", doc, re.S)
    return match.group(1).strip() if match else ""


def _descriptor(f: Finding) -> dict[str, Any]:
    rule: RuleInfo | None = rule_info(f.code)
    tags = ["jax", "gradient-checkpointing", CATEGORIES.get(f.code, CATEGORIES.get(f.code[3:4], "correctness"))]
    if rule is None:  # REM000: the file could not be read or parsed
        text = "The file could not be read, decoded or parsed, so it was not linted."
        short, full, doc, url = text, text, text, None
    else:
        doc, short, url = rule.doc, rule.summary, rule.url
        full = f"{short} {_section(doc, 'Why is this bad?')}"
    descriptor: dict[str, Any] = {
        "id": f.code,
        "name": f.name,
        "shortDescription": {"text": _clip(short)},
        "fullDescription": {"text": _clip(full)},
        "help": {"text": doc, "markdown": doc},
        "defaultConfiguration": {"level": LEVELS[f.severity]},
        "properties": {"tags": tags, "precision": "high", "problem.severity": PROBLEM_SEVERITY[f.severity]},
    }
    if url:
        descriptor["helpUri"] = url
    return descriptor


def _artifact(path: str) -> dict[str, str]:
    posix = Path(path).as_posix()
    if os.path.isabs(path):
        return {"uri": Path(path).as_uri()}
    return {"uri": quote(posix), "uriBaseId": SRCROOT}


def _region(start: Position, end: Position) -> dict[str, int]:
    return {"startLine": start.row, "startColumn": start.column + 1, "endLine": end.row, "endColumn": end.column + 1}


def _fingerprint(f: Finding, sources: dict[str, str], seen: collections.Counter[tuple[str, ...]]) -> str:
    """Code, path and the whitespace-normalised source line, plus which occurrence of that triple
    this is: no line number, so moving the code does not reopen the alert."""
    lines = sources.get(place(f), "").splitlines()
    line = " ".join(lines[f.start.row - 1].split()) if 0 < f.start.row <= len(lines) else ""
    key = (f.code, Path(f.path).as_posix(), line)
    seen[key] += 1
    digest = hashlib.sha256("\0".join(key).encode("utf-8")).hexdigest()[:16]
    return f"{digest}:{seen[key]}"


def _related(index: int, related: RelatedLocation) -> dict[str, Any]:
    region = {"startLine": related.start.row, "startColumn": related.start.column + 1}
    location = {"artifactLocation": _artifact(related.path), "region": region}
    return {"id": index, "physicalLocation": location, "message": {"text": related.message}}


def _fixes(f: Finding) -> list[dict[str, Any]]:
    if f.fix is None or f.cell is not None:  # a cell's rows are not the notebook file's
        return []
    unsafe = fix_label(f, " (unsafe fix)")

    def replacement(e: TextEdit) -> dict[str, Any]:
        return {"deletedRegion": _region(e.start, e.end), "insertedContent": {"text": e.content}}

    change = {"artifactLocation": _artifact(f.path), "replacements": [replacement(e) for e in f.fix.edits]}
    return [{"description": {"text": f.fix.message + unsafe}, "artifactChanges": [change]}]


def sarif_log(findings: list[Finding], sources: dict[str, str]) -> dict[str, Any]:
    descriptors: dict[str, dict[str, Any]] = {}
    for f in sorted(findings, key=lambda f: f.code):
        descriptors.setdefault(f.code, _descriptor(f))
    index = {code: i for i, code in enumerate(descriptors)}
    seen: collections.Counter[tuple[str, ...]] = collections.Counter()
    results = []
    for f in findings:
        result: dict[str, Any] = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": LEVELS[f.severity],
            "message": {"text": f.message if f.cell is None else f"cell {f.cell}: {f.message}"},
            "locations": [
                {"physicalLocation": {"artifactLocation": _artifact(f.path), "region": _region(f.start, f.end)}}
            ],
            "partialFingerprints": {"primaryLocationLineHash": _fingerprint(f, sources, seen)},
        }
        if f.related:
            result["relatedLocations"] = [_related(i, r) for i, r in enumerate(f.related)]
        if fixes := _fixes(f):
            result["fixes"] = fixes
        if f.cell is not None:  # the region's rows count within this cell of the notebook
            result["properties"] = {"cell": f.cell}
        if f.trace is not None:  # --trace's verdict; a refuted finding does not fail the run
            result.setdefault("properties", {})["trace"] = f.trace.to_json()
            if f.trace.status == "refuted":
                result["level"] = "note"
        results.append(result)
    driver = {
        "name": "remat-lint",
        "version": __version__,
        "semanticVersion": __version__,
        "informationUri": INFORMATION_URI,
        "rules": list(descriptors.values()),
    }
    run = {
        "tool": {"driver": driver},
        "originalUriBaseIds": {SRCROOT: {"uri": Path.cwd().as_uri().rstrip("/") + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": results,
    }
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}


def sarif(findings: list[Finding], sources: dict[str, str]) -> str:
    return json.dumps(sarif_log(findings, sources), indent=2, ensure_ascii=False) + "\n"
