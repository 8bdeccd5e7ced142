"""Driver side of discovery (discovery.py): what the recorded programs showed, as Findings every
reporter prints (no JAX imported here).

A discovered finding confirms the static findings it measures (``CONFIRMS``) on its line or about the
same checkpoint equations (the worker names them: REM102 at a call of the wrap where REM401 is found),
instead of repeating them: one finding, the static one, with the discovery's place as a related location
when it is another line; otherwise it is a new finding of its rule (REM401,
REM403), its ``trace`` marked ``"found_by": "trace"``. A checkpoint site of the static pass that no
recorded program applied is REM402, reported only when the run recorded a differentiated program
that was built, no program of the module failed to build, and no checkpoint that ran code of the
module is left unmatched to a static site.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from remat_lint.findings import Finding, Position, RelatedLocation
from remat_lint.trace.protocol import NO_SAVING, UNKNOWN_NAMES, Verdict

NOT_APPLIED = "REM402"

SHOWN = 3  # programs named in a REM402 message (its trace evidence lists them all)
# the static rules whose claim a discovered finding of that code measures at the same line
CONFIRMS = {
    NO_SAVING: {"REM101", "REM102", "REM104", "REM105", "REM106"},
    UNKNOWN_NAMES: {"REM008"},
}


@dataclass
class Observed:
    """Per module: the discovered records, the static site lines some program applied, and the programs seen."""

    found: list[dict[str, Any]] = field(default_factory=list)
    applied: set[int] = field(default_factory=set)
    programs: list[str] = field(default_factory=list)
    unattributed: bool = False  # a checkpoint that ran this file's code matched no static site: no REM402


def findings_for(
    path: str, observed: Observed, static: list[Finding], sites: list[int], command: str, enabled: frozenset[str]
) -> list[Finding]:
    """The new findings of one module (of the ``enabled`` codes, less ``noqa`` comments); the static
    ``findings`` a record confirms get its evidence."""
    from remat_lint.engine.runner import read_source
    from remat_lint.output.noqa import Suppressions
    from remat_lint.registry import rule_by_code

    source = read_source(path)
    text = source.text if not isinstance(source, Finding) else ""
    lines = text.splitlines()
    out: dict[tuple[str, int], Finding] = {}
    for record in observed.found:
        code, line = record["code"], record["line"]
        where = _where(record, command)
        trace = Verdict(
            "confirmed",
            f"found by tracing {where}",
            {**record["evidence"], "program": record["program"], "observed": record["observed"] or command},
            found_by="trace",
        )
        named = set(record.get("names", ()))
        confirmed = [
            f for i, f in enumerate(static) if (f.start.row == line or i in named) and f.code in CONFIRMS.get(code, ())
        ]
        for f in confirmed:
            if not f.trace or f.trace.status != "confirmed":
                earlier = f.trace or trace  # the sites and budgets --trace reported at the finding stay
                f.trace = dataclasses.replace(
                    trace,
                    reason=f"{trace.reason}: {record['message']}",
                    sites=earlier.sites,
                    budget=earlier.budget,
                    found_by="static, confirmed by trace",
                )
            if f.start.row != line and all(r.start.row != line or r.path != path for r in f.related):
                f.related += (_discovered_at(path, lines, line, code),)
        if not confirmed and (code, line) not in out:
            out[(code, line)] = _finding(rule_by_code(code), path, lines, line, record["message"], trace)
    if observed.programs and not observed.unattributed:
        names = list(dict.fromkeys(observed.programs))
        programs = ", ".join(names[:SHOWN]) + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")
        for line in sorted(set(sites) - observed.applied):
            message = (
                f"This checkpoint was not applied in any differentiated program of `{command}` "
                f"(programs: {programs}): a branch or a setting bypasses it there, or the run called it "
                "only outside a gradient"
            )
            trace = Verdict(
                "confirmed",
                f"found by tracing `{command}`",
                {"programs": list(dict.fromkeys(observed.programs)), "command": command},
                found_by="trace",
            )
            out[(NOT_APPLIED, line)] = _finding(rule_by_code(NOT_APPLIED), path, lines, line, message, trace)
    suppressions = Suppressions.parse(text)
    kept = [f for f in out.values() if f.code in enabled and not suppressions.suppresses(f.code, f.start.row)]
    return sorted(kept, key=lambda f: (f.start.row, f.code))


def _where(record: dict[str, Any], command: str) -> str:
    test = f"in {record['observed']}" if record["observed"] else f"in `{command}`"
    return f"{test}, program {record['program']}"


def _discovered_at(path: str, lines: list[str], line: int, code: str) -> RelatedLocation:
    """The checkpoint's own line, where tracing found the same misuse (as ``code``)."""
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    where = Position(line, len(text) - len(text.lstrip()))
    return RelatedLocation(path, where, f"the checkpoint this finding is about; tracing measured it here ({code})")


def _finding(rule: Any, path: str, lines: list[str], line: int, message: str, trace: Verdict) -> Finding:
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    start = len(text) - len(text.lstrip())
    return Finding(
        rule.code,
        rule.name,
        rule.severity,
        message,
        path,
        Position(line, start),
        Position(line, len(text)),
        trace=trace,
    )
