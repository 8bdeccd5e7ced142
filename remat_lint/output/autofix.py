"""``--fix``, ``--unsafe-fixes`` and ``--diff``: apply fixes, re-lint, repeat until nothing changes.

A fix is applied only if no line it changes carries a ``# noqa`` (suppressed findings never reach
here: the engine drops them). A pass whose result does not parse, or cannot be written in the
file's encoding, is discarded. Files are written atomically (a temporary file in the same folder,
then ``os.replace``) with their permissions, encoding (BOM, coding cookie) and line endings.
"""

from __future__ import annotations

import collections
import dataclasses
from dataclasses import dataclass, field

from remat_lint.cache.result_cache import Cache
from remat_lint.config.resolver import Resolver
from remat_lint.engine.results import PARSE_ERROR, FileResult
from remat_lint.engine.runner import ProjectPass, RunResult, lint_one, read_source
from remat_lint.engine.sources import Notebook, SourceFile, display_path
from remat_lint.engine.unsaved import Unsaved
from remat_lint.findings import Applicability, Finding, TextEdit
from remat_lint.output.fixes import non_overlapping
from remat_lint.output.noqa import UNUSED_NOQA, Suppressions, noqa_edits
from remat_lint.output.rewrite import write_atomic

MAX_PASSES = 10


Source = SourceFile | Notebook


@dataclass
class FixedFile:
    path: str
    source: Source  # as read
    fixed: Source  # after the fixes

    def data(self) -> bytes:
        return self.fixed.data()


@dataclass
class FixOutcome:
    result: RunResult  # the findings that remain, after the project-wide pass
    changed: list[FixedFile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    applied: collections.Counter[tuple[str, str, str]] = field(
        default_factory=collections.Counter
    )  # (path, code, name)

    @property
    def fixed(self) -> int:
        return sum(self.applied.values())


def listing(title: str, counts: collections.Counter[tuple[str, str, str]]) -> str:
    """ruff's --show-fixes enumeration: per file, how many findings of each rule."""
    lines = [title]
    for path in sorted({path for path, _, _ in counts}):
        lines.append(f"- {display_path(path)}:")
        lines += [
            f"    {n} \N{MULTIPLICATION SIGN} {code} ({name})"
            for (where, code, name), n in sorted(counts.items())
            if where == path
        ]
    return "\n".join(lines)


def applicable(finding: Finding, unsafe: bool) -> bool:
    if finding.fix is None or finding.fix.applicability is Applicability.DISPLAY_ONLY:
        return False
    return unsafe or finding.fix.applicability is Applicability.SAFE


def fixable(findings: list[Finding], sources: dict[str, str], unsafe: bool) -> list[Finding]:
    """The findings --fix (with --unsafe-fixes: ``unsafe``) would fix: not those on a noqa line."""
    noqa: dict[str, Suppressions] = {}
    chosen = []
    for f in findings:
        if not applicable(f, unsafe):
            continue
        if f.path not in noqa:
            noqa[f.path] = Suppressions.parse(sources.get(f.path, ""))
        if not _blocked(f, noqa[f.path]):
            chosen.append(f)
    return chosen


def honest(findings: list[Finding], sources: dict[str, str]) -> list[Finding]:
    """The findings as reporters should show them: a fix that ``--fix`` skips because a ``# noqa``
    covers a line it changes is display-only (JSON said ``safe`` for it)."""
    noqa: dict[str, Suppressions] = {}
    shown = []
    for f in findings:
        if f.fix is not None and f.path in sources:
            if f.path not in noqa:  # parsed once a file (setdefault would parse it at every finding)
                noqa[f.path] = Suppressions.parse(sources[f.path])
            if _blocked(f, noqa[f.path]):
                f = dataclasses.replace(f, fix=dataclasses.replace(f.fix, applicability=Applicability.DISPLAY_ONLY))
        shown.append(f)
    return shown


def fixable_counts(findings: list[Finding], sources: dict[str, str], unsafe: bool) -> tuple[int, int]:
    """(fixes that would be applied, unsafe fixes that --unsafe-fixes would add)."""
    count = len(fixable(findings, sources, unsafe))
    return count, 0 if unsafe else len(fixable(findings, sources, True)) - count


def _rows(edit: TextEdit) -> range:
    """The existing lines an edit changes (a whole line inserted before row r changes none)."""
    if edit.start == edit.end and edit.start.column == 0 and edit.content.endswith("\n"):
        return range(0)
    last = edit.end.row if edit.end.column > 0 or edit.end.row == edit.start.row else edit.end.row - 1
    return range(edit.start.row, last + 1)


def _blocked(finding: Finding, noqa: Suppressions) -> bool:
    """A fix is not applied on a line a ``# noqa`` covers, but REM100's, which edits the directive."""
    if finding.code == UNUSED_NOQA:
        return False
    return finding.fix is not None and any(noqa.has_noqa(row) for e in finding.fix.edits for row in _rows(e))


def read_sources(paths: list[str]) -> dict[str, Source | Finding]:
    return {path: read_source(path) for path in paths}


def fix_sources(
    sources: dict[str, Source | Finding],
    resolver: Resolver,
    *,
    unsafe: bool,
    jobs: int = 1,
    cache: Cache | None = None,
) -> FixOutcome:
    """Fix every source in memory; the caller writes, diffs or prints the changed ones.
    ``jobs`` and ``cache`` serve the project's other files (runner.ProjectPass)."""
    results = {path: lint_one(path, source, resolver(path)) for path, source in sources.items()}
    texts = {path: source.text for path, source in sources.items() if not isinstance(source, Finding)}
    project_pass = ProjectPass(sources, resolver, jobs=jobs, cache=cache, unsaved=Unsaved.of(texts))
    project_pass(list(results.values()))
    outcome = FixOutcome(RunResult(files=len(sources)))
    fixed: dict[str, Source] = {}
    for path, source in sources.items():
        if isinstance(source, Finding):
            continue
        fixed[path] = _fix_file(path, source, results, resolver, unsafe, outcome, project_pass)
        if fixed[path] is not source:
            outcome.changed.append(FixedFile(path, source, fixed[path]))
    findings = [f for r in results.values() for f in r.findings]
    resolver.retarget(findings)
    outcome.result.findings = sorted(findings, key=lambda f: f.sort_key)
    outcome.result.sources = {f.path: fixed[f.path].text for f in findings if f.path in fixed}
    outcome.result.notebooks = {p: nb for p, nb in fixed.items() if isinstance(nb, Notebook)}
    return outcome


def _fix_file(
    path: str,
    source: Source,
    results: dict[str, FileResult],
    resolver: Resolver,
    unsafe: bool,
    outcome: FixOutcome,
    project_pass: ProjectPass,
) -> Source:
    """The source after its fixes (``source`` itself when nothing changed)."""
    current = source
    for _ in range(MAX_PASSES):
        chosen = non_overlapping(fixable(results[path].findings, {path: current.text}, unsafe))
        if not chosen:
            return current
        try:
            new = current.apply([e for f in chosen for e in f.fix.edits])  # type: ignore[union-attr]  # ``fixable`` keeps findings with a fix
            new.data()
        except UnicodeEncodeError:
            outcome.warnings.append(
                f"{display_path(path)}: fixes not applied: the result cannot be encoded as {_encoding(source)}"
            )
            return current
        except ValueError as exc:  # a notebook's fix that spans cells
            outcome.warnings.append(f"{display_path(path)}: fixes not applied: {exc}")
            return current
        if new.text == current.text:  # fixes that change nothing: stop instead of counting them again
            return current
        fresh = lint_one(path, new, resolver(path))
        if any(f.code == PARSE_ERROR for f in fresh.findings):
            outcome.warnings.append(
                f"{display_path(path)}: a fix produced code that does not parse; not applied (please report)"
            )
            return current
        results[path] = fresh
        project_pass.unsaved.put(path, new.text)
        project_pass(list(results.values()))
        outcome.applied.update((path, f.code, f.name) for f in chosen)
        current = new
    outcome.warnings.append(f"{display_path(path)}: fixes did not converge after {MAX_PASSES} passes")
    return current


def _encoding(source: Source) -> str:
    """What a fixed file is written in: a notebook's JSON is always UTF-8."""
    return source.encoding if isinstance(source, SourceFile) else "utf-8"


def syntax_error(before: str, after: str) -> str | None:
    """Why ``after`` (a fix of ``before``) does not parse, where ``before`` does; None when it parses
    (or when ``before`` did not either: a fix never made it worse)."""
    import ast  # here, not at the top: only a run that writes fixes needs it

    try:
        ast.parse(after)
    except SyntaxError as exc:
        try:
            ast.parse(before)
        except SyntaxError:
            return None
        return f"line {exc.lineno}: {exc.msg}"
    return None


def write_fixes(changed: list[FixedFile]) -> list[str]:
    """Write every changed file that still parses; returns one error message per file refused or
    that could not be written."""
    errors = []
    for fixed in changed:
        broken = syntax_error(fixed.source.text, fixed.fixed.text)
        if broken is not None:
            errors.append(f"{display_path(fixed.path)} not written: the fix does not parse ({broken}; please report)")
            continue
        try:
            write_atomic(fixed.path, fixed.data())
        except OSError as exc:
            errors.append(f"cannot write fixes to {display_path(fixed.path)}: {exc.strerror or exc}")
    return errors


def add_noqa(findings: list[Finding]) -> tuple[int, list[str]]:
    """``--add-noqa``: a ``# noqa: CODE`` for every finding (REM000 aside: there is nothing to
    suppress), written into the files. Returns (directives added or extended, errors)."""
    by_path: dict[str, dict[int, set[str]]] = {}
    for f in findings:
        if f.code != PARSE_ERROR:
            by_path.setdefault(f.path, {}).setdefault(f.start.row, set()).add(f.code)
    added, errors = 0, []
    for path, codes_by_row in sorted(by_path.items()):
        source = read_source(path)
        if isinstance(source, Finding):
            errors.append(f"{display_path(path)}: {source.message}")
            continue
        edits = noqa_edits(source.text, codes_by_row)
        fixed = source.apply(edits)
        broken = syntax_error(source.text, fixed.text)
        if broken is not None:
            errors.append(
                f"{display_path(path)}: noqa directives not added: the result does not parse ({broken}; please report)"
            )
            continue
        try:
            write_atomic(path, fixed.data())
        except (OSError, ValueError) as exc:
            errors.append(f"cannot add noqa directives to {display_path(path)}: {exc}")
            continue
        added += len(edits)
    return added, errors


def unified_diff(fixed: FixedFile) -> str:
    """A patch that ``git apply`` / ``patch -p1`` accept; for a notebook, one diff per changed cell
    (``a/nb.ipynb:cell 3``, as ruff shows them)."""
    shown = display_path(fixed.path)
    if isinstance(fixed.source, Notebook) and isinstance(fixed.fixed, Notebook):
        after = {cell.number: cell.source for cell in fixed.fixed.cells}
        return "".join(
            _diff(cell.source, after.get(cell.number, ""), f"{shown}:cell {cell.number}")
            for cell in fixed.source.cells
            if after.get(cell.number, "") != cell.source
        )
    return _diff(fixed.source.text, fixed.fixed.text, shown)


def _diff(before: str, after: str, shown: str) -> str:
    import difflib  # here, not at the top: only --diff needs it

    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{shown}", f"b/{shown}"
    )
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
