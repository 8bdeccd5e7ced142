"""Reporters turn sorted findings into one output format; they never decide what is a finding."""

from __future__ import annotations

import importlib
from typing import Callable, Protocol

from remat_lint.findings import Finding, Severity


def place(f: Finding) -> str:
    """Where a finding is: its path, in a notebook ``path:cell N`` (rows count within the cell, and
    reporters find the cell's text in ``sources`` under this key)."""
    return f.path if f.cell is None else f"{f.path}:cell {f.cell}"


def fix_label(f: Finding, unsafe: str) -> str:
    """What a reporter adds to a fix's title: ``unsafe`` for an unsafe fix, and why a fix shown as
    display-only is never applied."""
    value = f.fix.applicability.value if f.fix is not None else "safe"
    return {"safe": "", "unsafe": unsafe}.get(value, " (not applied: a `# noqa` covers a line it changes)")


def severity(f: Finding) -> Severity:
    """A finding --trace refuted counts as information only: it does not fail the run either."""
    refuted = f.trace is not None and f.trace.status == "refuted"
    return Severity.INFO if refuted else f.severity


class Report(Protocol):
    def __call__(self, findings: list[Finding], sources: dict[str, str]) -> str: ...


# format -> (module, function): a run imports only the reporter it uses (sarif alone costs ~3 ms).
_REPORTERS = {
    "full": ("text", "full"),
    "concise": ("text", "concise"),
    "json": ("json_report", "json_array"),
    "json-lines": ("json_report", "json_lines"),
    "github": ("github", "github"),
    "sarif": ("sarif", "sarif"),
    "gitlab": ("gitlab", "gitlab"),
    "junit": ("junit", "junit"),
    "pylint": ("pylint", "pylint"),
    "rdjson": ("rdjson", "rdjson"),
    "azure": ("azure", "azure"),
    "grouped": ("grouped", "grouped"),
}
FORMATS: tuple[str, ...] = tuple(_REPORTERS)


def reporter(name: str) -> Report:
    """The reporter of the output format ``name``."""
    module, function = _REPORTERS[name]
    report: Report = getattr(importlib.import_module(f"remat_lint.output.reporters.{module}"), function)
    return report


ReportFn = Callable[[list[Finding], dict[str, str]], str]
