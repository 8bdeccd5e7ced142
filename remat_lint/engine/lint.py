"""prefilter -> one libcst parse -> shared analysis -> rules -> findings (positions, fixes, noqa).

Most files in a JAX repository never use remat: a staged prefilter (prefilter/stages.py) rejects them
before any libcst parse. Positions (libcst's PositionProvider costs about 2x a parse) are computed only
for files where a rule fired, and only for the statements that hold a finding (positions.py).
"""

from __future__ import annotations

import ast
import sys
from typing import Any, Iterable

import libcst as cst
from libcst.helpers import get_full_name_for_node
from libcst.metadata import CodeRange

from remat_lint.engine.context import LintContext
from remat_lint.engine.prefilter.stages import Prefilter, prefilter_for
from remat_lint.engine.results import FileResult, build_project, diagnostic, project_codes, project_phase
from remat_lint.findings import Candidate, Finding, Fix, Position, TextEdit
from remat_lint.output.noqa import Suppressions
from remat_lint.project.extract import summarize
from remat_lint.registry import all_rules
from remat_lint.rule import FixSpec, RawFinding
from remat_lint.rules.rem100_unused_noqa import UnusedNoqa
from remat_lint.rules.rem100_unused_noqa import unused as unused_noqa


def lint_source(
    path: str,
    source: str,
    codes: frozenset[str],
    *,
    facts: frozenset[str] = frozenset(),
    is_test_file: bool = False,
    apply_noqa: bool = True,
    tree: ast.AST | None = None,
    words: frozenset[str] = frozenset(),
    defer_project: bool = False,
) -> FileResult:
    """Lint one decoded file with the rules in ``codes``. Never raises on bad input.

    ``facts``: rules whose facts to collect although they do not check this file (project-wide
    rules need every file's facts, whatever its per-file ignores).
    ``tree``: the file's ``ast`` when the caller has it (flake8), to save a parse.
    ``words``: words that make the file worth a parse although no rule's prefilter keeps it (a
    symbol the project phase looks for).
    ``defer_project``: the caller runs the project phase over many files; otherwise the file is
    its own project (pending candidates that no other file can confirm are dropped)."""
    result = FileResult(path)
    checked = {rule.code for rule in all_rules() if rule.code in codes and not (is_test_file and rule.quiet_in_tests)}
    rules = [rule for rule in all_rules() if rule.code in checked or rule.code in facts]
    if not rules:
        return result
    prefilter = prefilter_for(frozenset(rule.code for rule in rules))
    if words:
        prefilter = Prefilter((*prefilter.words, *words), prefilter.needs, symbols=True)
    verdict = prefilter.check(source, tree)
    if not verdict.keep:
        return result
    running = checked
    if verdict.needs_only:  # the other rules' prefilters reject the file: they do not check it, but
        # collect its facts, as the project phase does reading a file not kept (the names it hands a
        # library, for REM008): the runner reads again only files without a summary.
        running = {rule.code for rule in rules if rule.code in checked and rule.prefilter_apis}
    error = verdict.error
    if verdict.too_deep and error is not None:  # a nesting limit: libcst would crash the process
        result.findings.append(
            diagnostic(path, f"SyntaxError: {error.msg}", error.lineno or 1, (error.offset or 1) - 1)
        )
        return result
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        result.findings.append(_syntax_error(path, source, exc))
        return result
    except RecursionError:
        result.findings.append(diagnostic(path, "file too deeply nested to parse"))
        return result
    result.parsed = True
    ctx = LintContext(
        path, source, module, is_test_file, verdict.tree if isinstance(verdict.tree, ast.Module) else None
    )
    try:
        for rule in rules:
            try:
                if rule.code in running:
                    rule(ctx).check()
                collected = rule.collect_facts(ctx)
            except RecursionError:
                raise
            except Exception as exc:  # a bug in one rule must not hide the others' findings
                result.findings.append(
                    diagnostic(path, f"internal error in {rule.code}, please report it: {type(exc).__name__}: {exc}")
                )
                continue
            if collected is not None:
                result.facts[rule.code] = collected
        if project_codes(frozenset(rule.code for rule in rules)):
            result.summary = summarize(ctx)
        findings, candidates = _locate(ctx, ctx.raw_findings) if ctx.raw_findings else ([], [])
    except RecursionError:
        result.findings.append(diagnostic(path, "file too deeply nested to analyse"))
        return result
    if findings or candidates or UnusedNoqa.code in checked:
        findings = _apply_noqa(result, findings, candidates, Suppressions.parse(source), source, checked, apply_noqa)
    result.findings.extend(findings)
    if not defer_project:
        project_phase([result], build_project(None, [result]), codes)
    return result


def _apply_noqa(
    result: FileResult,
    findings: list[Finding],
    candidates: list[Candidate],
    s: Suppressions,
    source: str,
    checked: set[str],
    apply_noqa: bool,
) -> list[Finding]:
    """The findings no ``# noqa`` suppresses (the others go to ``result.suppressed``), and REM100's;
    the candidates go to ``result.candidates`` or ``result.suppressed_candidates`` the same way.
    flake8 applies inline directives itself (``apply_noqa=False``): the file-level ``# remat-lint:
    noqa`` and the spellings flake8 does not read (``#noqa``) are ours in both modes."""
    check = s.suppresses if apply_noqa else (lambda code, row: s.file_suppresses(code) or s.unseen_by_flake8(code, row))
    result.suppressed = [f for f in findings if check(f.code, f.start.row)]
    kept = [f for f in findings if not check(f.code, f.start.row)]
    for candidate in candidates:
        hides = check(candidate.finding.code, candidate.finding.start.row)
        (result.suppressed_candidates if hides else result.candidates).append(candidate)
    if UnusedNoqa.code in checked:
        proposed = [*findings, *(c.finding for c in candidates)]
        hidden = [f for f in proposed if s.suppresses(f.code, f.start.row)]
        # A rule that reports at other modules' calls decides this file's lines in the project phase.
        decided = checked - {rule.code for rule in all_rules() if rule.reports_at_calls}
        kept += [f for f in unused_noqa(result.path, source, s, hidden, decided) if not check(f.code, f.start.row)]
    return kept


def _syntax_error(path: str, source: str, exc: cst.ParserSyntaxError) -> Finding:
    """Python's own message and position when it agrees the file is invalid (libcst's native
    parser reports less helpful ones); otherwise libcst lags behind the grammar."""
    try:
        ast.parse(source)
    except SyntaxError as py_exc:
        return diagnostic(path, f"SyntaxError: {py_exc.msg}", py_exc.lineno or 1, (py_exc.offset or 1) - 1)
    except (RecursionError, MemoryError, ValueError):
        pass
    else:
        return diagnostic(
            path, f"libcst cannot parse this file (newer syntax?): {exc.message}", exc.raw_line, exc.raw_column
        )
    return diagnostic(path, f"SyntaxError: {exc.message}", exc.raw_line, exc.raw_column)


def _locate(ctx: LintContext, raw: Iterable[RawFinding]) -> tuple[list[Finding], list[Candidate]]:
    """The findings and the candidates (``Rule.candidate``) of the rules' reports, located."""
    positions = ctx.positions
    findings: list[Finding] = []
    candidates: list[Candidate] = []
    seen: set[tuple[str, int]] = set()
    for item in raw:
        key = (item.rule.code, id(item.node))
        if key in seen:  # two forms of one mistake reported on one node: once is enough
            continue
        seen.add(key)
        span = positions[item.node]
        finding = Finding(
            code=item.rule.code,
            name=item.rule.name,
            severity=item.rule.severity,
            message=item.message,
            path=ctx.path,
            start=_pos(span.start),
            end=_pos(span.end),
            fix=_fix(ctx, positions, item.fix) if item.fix else None,
            data=item.data,
        )
        if item.pending is None:
            findings.append(finding)
        else:
            candidates.append(Candidate(finding, *item.pending))
    return findings, candidates


def _pos(p: Any) -> Position:
    return Position(p.line, p.column)


def _fix(ctx: LintContext, positions: Any, spec: FixSpec) -> Fix | None:
    """The finding's fix; none when it needs ``import X`` but the module binds ``X`` to something
    else (the added import would rebind it, and the fix's ``X.…`` would not mean what it says)."""
    edits = []
    for old, new in spec.replacements:
        span: CodeRange = positions[old]
        content = new if isinstance(new, str) else ctx.module.code_for_node(new)
        edits.append(TextEdit(_pos(span.start), _pos(span.end), content))
    if spec.add_import and not _imports_module(ctx, spec.add_import):
        if ctx.model.module_scope.bindings.get(spec.add_import.partition(".")[0]):
            return None
        at = _import_position(ctx.module, positions, spec.add_import)
        edits.append(TextEdit(at, at, f"import {spec.add_import}{ctx.module.default_newline}"))
    return Fix(spec.message, spec.applicability, tuple(sorted(edits, key=lambda e: (e.start, e.end))))


def _imports_module(ctx: LintContext, name: str) -> bool:
    return any(b.kind == "import" and b.qname == name for b in ctx.model.module_scope.bindings.get(name, []))


def _import_position(module: cst.Module, positions: Any, name: str) -> Position:
    """Where isort (and ruff's I001) would put ``import name``, a third-party module: among the
    leading third-party imports, plain ``import``s sorted by module name come before ``from``
    imports. Without any, after the docstring and ``__future__`` imports."""
    row, third_party = 1, []
    for index, stmt in enumerate(module.body):
        first = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        docstring = index == 0 and isinstance(first, cst.Expr) and isinstance(first.value, cst.SimpleString)
        imported = _imported_module(first)
        if not docstring and imported is None:
            break
        if imported == "__future__" or docstring:
            row = positions[stmt].end.line + 1
        elif imported and imported.partition(".")[0] not in sys.stdlib_module_names:  # "": a relative import
            third_party.append((stmt, isinstance(first, cst.ImportFrom), imported))
    for stmt, is_from, imported in third_party:
        if is_from or imported.lower() > name.lower():
            return Position(positions[stmt].start.line, 0)
    if third_party:
        return Position(positions[third_party[-1][0]].end.line + 1, 0)
    return Position(row, 0)


def _imported_module(statement: cst.BaseSmallStatement | None) -> str | None:
    """``import a.b`` / ``from a.b import c``: "a.b" ("" for a relative import); None otherwise."""
    if isinstance(statement, cst.Import):
        return get_full_name_for_node(statement.names[0].name) or ""
    if isinstance(statement, cst.ImportFrom):
        if statement.relative or statement.module is None:
            return ""
        return get_full_name_for_node(statement.module) or ""
    return None
