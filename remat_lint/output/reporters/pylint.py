"""``pylint``: ``path:line: [CODE] message``, pylint's parseable layout (as ruff writes it), which
editors and CI log parsers already read."""

from __future__ import annotations

from remat_lint.findings import Finding
from remat_lint.output.reporters import place


def pylint(findings: list[Finding], sources: dict[str, str]) -> str:
    return "".join(f"{place(f)}:{f.start.row}: [{f.code}] {f.title}\n" for f in findings)
