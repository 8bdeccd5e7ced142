"""The base class every rule derives from (Fixit's self-describing rule, with ruff's codes and docs).

A rule is one class in one module under ``rules/``: its code, kebab-case name, severity, the
metadata the engine, registry and reporters read (on by default, quiet in test code, fix
availability, project-wide, preview, since-version), a docstring in ruff's sections and embedded
VALID/INVALID examples that the test suite runs. ``check`` inspects the shared analysis in
``self.ctx`` and calls ``self.report``; it never parses, reads files or prints.
"""

from __future__ import annotations

import enum
import re
import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Iterable, Mapping

from remat_lint.findings import Applicability, Candidate, Finding, Severity
from remat_lint.trace.checks import TraceCheck

if TYPE_CHECKING:
    import libcst as cst

    from remat_lint.engine.context import LintContext
    from remat_lint.project.model import Project, ProjectModule

DOCS_URL = "https://github.com/remat-lint/remat-lint/blob/main/docs/rules.md#{code}"


@dataclass(frozen=True)
class Invalid:
    """An embedded example that must produce at least one finding of the rule.

    ``fixed`` is the expected source after applying the rule's fixes (safe and unsafe), when the
    rule offers one for this example.
    """

    code: str
    fixed: str | None = None


@dataclass
class FixSpec:
    """A fix as a rule describes it: node replacements in the parsed tree, plus imports it needs."""

    message: str
    replacements: list[tuple[cst.CSTNode, cst.CSTNode | str]]
    applicability: Applicability = Applicability.SAFE
    add_import: str | None = None  # a module to import at the top (``functools``) if not imported yet


@dataclass
class RawFinding:
    """A finding before positions are known (positions are computed only when something fires)."""

    rule: type[Rule]
    node: cst.CSTNode
    message: str
    fix: FixSpec | None = None
    data: dict[str, Any] = field(default_factory=dict)
    # A candidate's (``Rule.candidate``): the symbols and values its ``Candidate`` carries; None for a final finding.
    pending: tuple[tuple[str, ...], Mapping[str, Any]] | None = None


class FixAvailability(str, enum.Enum):
    """Whether a rule's findings come with a fix (ruff's ``FixAvailability``)."""

    NONE = "none"
    SOMETIMES = "sometimes"
    ALWAYS = "always"


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity]
    default_enabled: ClassVar[bool] = True
    # Not checked in test code (``test-paths``), where the pattern is deliberate or harmless.
    quiet_in_tests: ClassVar[bool] = False
    fix: ClassVar[FixAvailability] = FixAvailability.NONE
    fix_applicability: ClassVar[tuple[Applicability, ...]] = ()  # the applicabilities its fixes can have
    # Decided on all linted files together, from every file's ``collect_facts``.
    project_wide: ClassVar[bool] = False
    # Whether its ``check_project`` needs the file's ``ProjectModule``: in a file the project has no
    # summary of, such a rule's candidates are dropped without asking it. REM008 reads facts only.
    project_needs_module: ClassVar[bool] = True
    # Whether ``check_project`` reports at other modules' calls of the candidate's wrap (REM012): the
    # candidates of files read only for the project are judged too, for the calls in linted files.
    reports_at_calls: ClassVar[bool] = False
    # For such a rule: words that a module's top-level code (outside def and class bodies,
    # decorators and imports included) names, all of them, wherever it binds a wrap to a
    # module-level name other modules may call (a candidate). A module that a linted file imports
    # is parsed for candidates only where one rule's words are all there (project/exports.py);
    # empty: every module may hold one.
    export_words: ClassVar[tuple[str, ...]] = ()
    preview: ClassVar[bool] = False  # new, may still change: runs only when its own code is selected
    # Reported only by ``--trace --trace-run`` discovery (trace/worker/discovery.py) from the programs the run
    # differentiated; its ``check`` never reports (no spelling shows the misuse), so it has no INVALID examples.
    dynamic_only: ClassVar[bool] = False
    since: ClassVar[str] = "0.1.0"  # the first release; a rule added later names the version that adds it
    # Words (whole words, lower or upper case, anywhere in the text) whose presence makes a file worth parsing
    # for this rule although it names no remat API (remat_lint/engine/prefilter/stages.py). Rules about remat
    # sites need none: every file that names an API is parsed. Each word costs parse time.
    prefilter_words: ClassVar[tuple[str, ...]] = ()
    # For a rule that can fire in a file naming no remat API: the prefilter.API_GROUPS ("scan",
    # "differentiation") that such a file must all reference for it to fire.
    prefilter_apis: ClassVar[tuple[str, ...]] = ()
    # What --trace can show about its findings (remat_lint/trace/protocol.py); None: nothing. Rule
    # modules write ``trace_check = Rule.TraceCheck(...)``.
    trace_check: ClassVar[TraceCheck | None] = None
    TraceCheck: ClassVar[type[TraceCheck]] = TraceCheck
    VALID: ClassVar[list[str]] = []
    INVALID: ClassVar[list[Invalid]] = []

    def __init__(self, ctx: LintContext) -> None:
        self.ctx = ctx

    def check(self) -> None:
        raise NotImplementedError

    def report(
        self,
        node: cst.CSTNode,
        message: str,
        fix: FixSpec | None = None,
        **data: Any,
    ) -> None:
        self.ctx.raw_findings.append(RawFinding(type(self), node, message, fix, data))

    def candidate(
        self,
        node: cst.CSTNode,
        symbols: Iterable[str],
        values: Mapping[str, Any] | None = None,
        *,
        message: str = "",
        fix: FixSpec | None = None,
    ) -> None:
        """Report a ``Candidate`` at ``node`` that only ``check_project`` can confirm: ``symbols``
        name what the decision needs, ``values`` what ``check`` saw (plain picklable data)."""
        pending = (tuple(symbols), dict(values or {}))
        self.ctx.raw_findings.append(RawFinding(type(self), node, message, fix, pending=pending))

    @classmethod
    def check_project(cls, candidates: list[Candidate], module: ProjectModule, project: Project) -> list[Finding]:
        """The project phase of a project-wide rule, after every file was linted: of this rule's
        candidates in one file (``module`` in ``project``; None, for a rule that sets
        ``project_needs_module = False``, when the file has no summary), the findings
        it confirms, reworded in place where the project tells more.

        A rule creates findings here by reporting candidates in ``check`` with ``self.candidate``
        that only the project confirms; unconfirmed candidates are dropped. A finding reported with
        ``self.report`` is final: the project phase keeps it and never shows it to the rule."""
        return []

    @staticmethod
    def collect_facts(ctx: LintContext) -> object:
        """Per-file facts for ``check_project``; None when the rule needs none. Plain picklable
        data: facts travel from worker processes and live in the result cache."""
        return None

    @classmethod
    def doc(cls) -> str:
        return clean_doc(cls.__doc__)

    @classmethod
    def summary(cls) -> str:
        return summary_of(cls.doc(), cls.name)

    @classmethod
    def url(cls) -> str:
        return DOCS_URL.format(code=cls.code.lower())


def clean_doc(docstring: str | None) -> str:
    """A rule's doc: its class docstring, dedented."""
    return textwrap.dedent(docstring or "").strip()


def summary_of(doc: str, name: str) -> str:
    """The first paragraph of a rule doc's "What it does" (the rule's ``name`` without one), on one
    line: for tables, SARIF short descriptions and editor hovers."""
    match = re.search(r"## What it does\s*\n(.+?)(?:\n\n|$)", doc, re.S)
    return " ".join((match.group(1) if match else name).split())


class DynamicRule(Rule):
    """A rule that only ``--trace --trace-run`` discovery reports (trace/worker/discovery.py, trace/driver/dynamic_findings.py),
    from the programs the run differentiated: no spelling shows the misuse, so the static pass reports nothing."""

    dynamic_only = True

    def check(self) -> None:
        return None
