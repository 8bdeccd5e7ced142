"""``gitlab``: GitLab's Code Quality report (``artifacts: reports: codequality``), a JSON array.

Each issue has GitLab's required fields: ``description``, ``check_name`` (the code, as ruff
writes it), ``fingerprint``, ``severity`` and ``location`` with ``path`` and ``lines.begin``.
GitLab tells new issues from fixed ones by fingerprint, so it does not depend on the line number
(an issue survives lines added above it); identical findings in one file are told apart by their
order, as ruff does. Paths are relative to ``CI_PROJECT_DIR`` when GitLab sets it (as ruff's are),
else to the working directory; a notebook's finding points at the notebook's first line (its rows
count within a cell, which GitLab cannot show), as ruff's does.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os

from remat_lint.findings import Finding, Severity
from remat_lint.output.reporters import place, severity

# GitLab's levels are info, minor, major, critical and blocker.
SEVERITIES = {Severity.ERROR: "major", Severity.WARNING: "minor", Severity.INFO: "info"}


def fingerprint(f: Finding, seen: collections.Counter[tuple[str, str, str]]) -> str:
    """A hash of the code, path and message, and of how many identical findings came before."""
    key = (f.code, place(f), f.message)
    occurrence, seen[key] = seen[key], seen[key] + 1
    return hashlib.sha256("\0".join([*key, str(occurrence)]).encode()).hexdigest()[:32]


def location(f: Finding, project_dir: str | None) -> dict[str, object]:
    path = f.path if project_dir is None else os.path.relpath(os.path.abspath(f.path), project_dir)
    lines = {"begin": 1, "end": 1} if f.cell is not None else {"begin": f.start.row, "end": f.end.row}
    return {"path": path, "lines": lines}


def gitlab(findings: list[Finding], sources: dict[str, str]) -> str:
    project_dir = os.environ.get("CI_PROJECT_DIR")
    seen: collections.Counter[tuple[str, str, str]] = collections.Counter()
    issues = [
        {
            "description": f"{f.code}: {f.title}",
            "check_name": f.code,
            "fingerprint": fingerprint(f, seen),
            "severity": SEVERITIES[severity(f)],
            "location": location(f, project_dir),
        }
        for f in findings
    ]
    return json.dumps(issues, indent=2) + "\n"
