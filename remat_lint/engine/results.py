"""What linting a file produces, and the project phase over all files' results.

Kept free of libcst (and of the rule modules, which import it) so that a run where no file needs
parsing, a warm cache or a pre-commit run on files that never mention remat, starts fast.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable

from remat_lint.findings import Candidate, Finding, Position, Severity

if TYPE_CHECKING:
    from remat_lint.project.model import Project
    from remat_lint.project.summary import ModuleSummary

PARSE_ERROR = "REM000"


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    # Per-rule facts for the project-wide pass (rule code -> facts).
    facts: dict[str, Any] = field(default_factory=dict)
    # What the module offers the others (imports, definitions, calls), when a project-wide rule ran.
    summary: ModuleSummary | None = None
    parsed: bool = False
    # The findings a `# noqa` suppressed: --ignore-noqa reports them.
    suppressed: list[Finding] = field(default_factory=list)
    # What only the project phase can confirm (``project_phase``), and those a `# noqa` suppressed.
    candidates: list[Candidate] = field(default_factory=list)
    suppressed_candidates: list[Candidate] = field(default_factory=list)


def diagnostic(path: str, message: str, row: int = 1, column: int = 0) -> Finding:
    """A REM000 finding: the file could not be linted."""
    pos = Position(max(row, 1), max(column, 0))
    return Finding(PARSE_ERROR, "parse-error", Severity.ERROR, message, path, pos, pos)


def project_codes(codes: frozenset[str]) -> frozenset[str]:
    """The project-wide rules (REM008) among ``codes``: they need every file's facts."""
    from remat_lint.registry import rule_index

    return frozenset(info.code for info in rule_index() if info.project_wide and info.code in codes)


def project_phase(
    results: list[FileResult],
    project: Project,
    codes: frozenset[str],
    context: Iterable[FileResult] = (),
    admit: Callable[[Finding], bool] = lambda finding: True,
) -> None:
    """Let the project-wide rules among ``codes`` decide their candidates in ``results`` with the
    whole project in view: each file's candidates of a rule go to its ``Rule.check_project`` with
    the file's module; what it returns is reported, the other candidates are dropped. Every
    finding is final and kept here. Only rules with candidates
    are imported. A rule that fails here loses its candidates in that file, which gets a REM000
    finding.
    A rule that ``reports_at_calls`` may return findings in other files (the calls of a wrap): those
    go to the file's result among ``results`` when ``admit`` lets them (its configuration and
    ``# noqa``), else nowhere; its candidates in ``context`` (files read only for the project) are
    judged too, for the calls in ``results``."""
    import os

    from remat_lint.registry import rule_class

    context = list(context)
    fired = {c.finding.code for r in [*results, *context] for c in r.candidates} & project_codes(codes)
    by_path = {os.path.realpath(r.path): r for r in results}
    reported = {id(r) for r in results}
    for rule in map(rule_class, sorted(fired)):
        for result in [*results, *context] if rule.reports_at_calls else results:
            candidates = [c for c in result.candidates if c.finding.code == rule.code]
            if not candidates:
                continue
            module = project.module_of(result.path)
            try:
                confirmed = (
                    rule.check_project(candidates, module, project)  # type: ignore[arg-type]  # None only for a rule with project_needs_module = False, whose check_project takes None (REM008)
                    if module is not None or not rule.project_needs_module
                    else []
                )
            except Exception as exc:  # a bug in one rule must not hide the others' findings
                confirmed = []
                error = f"internal error in {rule.code} (project phase), please report it: {type(exc).__name__}: {exc}"
                result.findings.append(diagnostic(result.path, error))
            for finding in (f for f in confirmed if f.path != result.path):  # at another file's call
                target = by_path.get(os.path.realpath(finding.path))
                if target is not None and admit(finding):
                    finding.path = target.path
                    target.findings.append(finding)
            if id(result) in reported:
                result.findings += [f for f in confirmed if f.path == result.path]


def build_project(root: str | None, results: Iterable[FileResult]) -> Project:
    """The project of the files behind ``results`` (their summaries and facts), named from ``root``."""
    from remat_lint.project.model import Project

    project = Project(root)
    for result in results:
        if result.summary is not None:
            project.add(result.path, result.summary, result.facts)
    return project
