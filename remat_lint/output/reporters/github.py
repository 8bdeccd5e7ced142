"""``github``: GitHub Actions workflow commands, so a pull request is annotated on the diff.

``::error file=a.py,line=2,col=5,endLine=2,endColumn=9,title=REM001 <first sentence>::a.py:2:5: REM001 message``
with the escaping of actions/toolkit's ``command.ts``. GitHub shows only 10 annotations of each
level per step (the rest stay in the log), so the most severe come first and a closing line says
how many were not shown.
"""

from __future__ import annotations

import collections

from remat_lint.findings import Finding, Severity
from remat_lint.output.reporters import fix_label, place, severity

SHOWN_PER_LEVEL = 10
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
ORDER = ("error", "warning", "notice")


def level(f: Finding) -> str:
    return LEVELS[severity(f)]


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(f: Finding) -> str:
    """One workflow command. GitHub rejects ``col``/``endColumn`` on a range of several lines, so
    those get lines only. The message starts with ``path:line:col: CODE`` (as ruff's does): the log
    shows only the message, and it stays readable where annotations are not shown."""
    properties: dict[str, object] = {"file": f.path, "line": f.start.row}
    if f.end.row == f.start.row:
        properties["col"] = f.start.column + 1
    properties["endLine"] = f.end.row
    if f.end.row == f.start.row:
        properties["endColumn"] = f.end.column + 1  # one past the last character, as ruff writes it
    properties["title"] = f"{f.code} {f.title}"
    joined = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties.items())
    message = f"{place(f)}:{f.start.row}:{f.start.column + 1}: {f.code} {f.message}"
    if f.fix is not None:
        unsafe = fix_label(f, " (unsafe fix)")
        message += f"\nhelp: {f.fix.message}{unsafe}"
    if f.trace is not None:
        reason = f.trace.reason
        message += f"\ntrace: {f.trace.status}" + (f": {reason}" if reason else "")
    return f"::{level(f)} {joined}::{escape_data(message)}"


def github(findings: list[Finding], sources: dict[str, str]) -> str:
    ordered = sorted(findings, key=lambda f: (ORDER.index(level(f)), f.sort_key))
    lines = [annotation(f) for f in ordered]
    per_level = collections.Counter(level(f) for f in findings)
    hidden = {name: per_level[name] - SHOWN_PER_LEVEL for name in ORDER if per_level[name] > SHOWN_PER_LEVEL}
    if hidden:
        counts = ", ".join(f"{n} {name}{'s' if n != 1 else ''}" for name, n in hidden.items())
        lines.append(
            f"remat-lint: {counts} not shown as annotations (GitHub shows {SHOWN_PER_LEVEL} of each level per step); "
            f"all {len(findings)} findings are listed above, or upload --output-format sarif to code scanning."
        )
    return "".join(line + "\n" for line in lines)
