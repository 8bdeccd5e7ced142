"""``grouped``: the findings under the name of their file, as ruff's ``grouped`` prints them: the
rows right-aligned and the columns left-aligned within a file, ``[*]`` where a safe fix applies,
a blank line after each file."""

from __future__ import annotations

import itertools

from remat_lint.findings import Applicability, Finding
from remat_lint.output.reporters import place


def _mark(f: Finding) -> str:
    return "[*] " if f.fix is not None and f.fix.applicability is Applicability.SAFE else ""


def grouped(findings: list[Finding], sources: dict[str, str]) -> str:
    out = []
    for name, group in itertools.groupby(findings, key=place):
        in_file = list(group)
        rows = max(len(str(f.start.row)) for f in in_file)
        columns = max(len(str(f.start.column + 1)) for f in in_file)
        out.append(f"{name}:\n")
        for f in in_file:
            where = f"{f.start.row:>{rows}}:{f.start.column + 1:<{columns}}"
            out.append(f"  {where} {f.code} {_mark(f)}{f.title}\n")
        out.append("\n")
    return "".join(out)
