"""``azure``: Azure Pipelines logging commands, one per finding, as ruff writes them:
``##vso[task.logissue type=error;sourcepath=a.py;linenumber=2;columnnumber=5;code=REM001;]message``.

Azure knows two types: a finding of severity error is an error, the others (and one --trace
refuted) warnings, as the ``github`` format grades them. Property values and the message are
escaped as the agent expects (``%AZP25``, ``%3B``, ``%5D``, ``%0D``, ``%0A``)."""

from __future__ import annotations

from remat_lint.findings import Finding, Severity
from remat_lint.output.reporters import place, severity


def escape(text: str, property_value: bool = True) -> str:
    text = text.replace("%", "%AZP25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(";", "%3B").replace("]", "%5D") if property_value else text


def azure(findings: list[Finding], sources: dict[str, str]) -> str:
    lines = []
    for f in findings:
        kind = "error" if severity(f) is Severity.ERROR else "warning"
        lines.append(
            f"##vso[task.logissue type={kind};sourcepath={escape(place(f))};linenumber={f.start.row};"
            f"columnnumber={f.start.column + 1};code={f.code};]{escape(f.title, property_value=False)}\n"
        )
    return "".join(lines)
