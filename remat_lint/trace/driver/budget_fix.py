"""``--fix``/``--diff`` with ``--memory-budget``: the chosen policies written into the checkpoint calls.

Each change is a text edit at a position libcst gives (the rest of the file stays byte for byte):
``policy=`` replaced or added (``@jax.checkpoint`` becomes ``@partial(jax.checkpoint, policy=...)`` where
the module imports ``functools.partial``), ``prevent_cse=False`` made ``True``, a checkpoint removed (a decorator
line dropped, ``jax.checkpoint(f, ...)`` replaced by ``f``). A policy that comes from elsewhere (a
name, a config field: ``policy=cfg.remat_policy``) is not rewritten; the report says which value to
set. A plan is written whole or not at all (``fix_plans``): a part of it is a program nobody measured,
which may not fit the budget (the rest of a plan that removes one checkpoint and cannot change the
policy of another keeps what that policy saved, and more). Runs in the main process (no JAX).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from remat_lint.analysis.semantic import SemanticModel
from remat_lint.analysis.sites import RematSite, find_sites
from remat_lint.analysis.values import Values
from remat_lint.apis.jax import PREFIX as JAX_PREFIX
from remat_lint.engine.runner import read_source
from remat_lint.engine.sources import Notebook, SourceFile, display_path
from remat_lint.findings import Finding, Position, TextEdit
from remat_lint.output.autofix import FixedFile

AS_WRITTEN = "as written"  # budget.AS_WRITTEN (budget.py is not imported here: its worker half needs JAX)


@dataclass(frozen=True)
class Change:
    chosen: str  # the candidate's name: "none", "prevent_cse=True", a policy
    policy: str | None  # the source of the policy to write


def changes_by_file(plans: Sequence[Any]) -> tuple[dict[str, dict[int, Change]], list[str]]:
    """The sites to change per file, from the plans that fit; a site two targets want changed
    differently is left as it is (and said so)."""
    wanted: dict[str, dict[int, set[Change]]] = {}
    placed, unplaced = (
        set(),
        {},
    )  # (target, site function, choice): a module's plan has no line for another module's site
    for plan in plans:
        if not plan.report.get("fits"):
            continue
        for row in plan.report["sites"]:
            if row["chosen"] == AS_WRITTEN:
                continue
            key = (plan.target, row["function"], row["chosen"])
            if row["line"] is None:
                unplaced[key] = (
                    f"{plan.target}: the site {row['function']} has no line in the linted files: set {row['chosen']} by hand"
                )
                continue
            placed.add(key)
            wanted.setdefault(plan.path, {}).setdefault(row["line"], set()).add(Change(row["chosen"], row["policy"]))
    changes: dict[str, dict[int, Change]] = {}
    notes = [note for key, note in unplaced.items() if key not in placed]
    for path, by_line in wanted.items():
        for line, options in sorted(by_line.items()):
            if len(options) == 1:
                changes.setdefault(path, {})[line] = next(iter(options))
            else:
                names = " / ".join(sorted(c.chosen for c in options))
                notes.append(f"{display_path(path)}:{line}: targets disagree ({names}): not rewritten")
    return changes, notes


def fix_plans(plans: Sequence[Any]) -> tuple[list[FixedFile], list[str]]:
    """The files that the plans that fit change, each plan written whole or left out, and what was
    not written and why."""
    kept = [plan for plan in plans if plan.report.get("fits")]
    notes: dict[str, None] = {}  # in order, once each
    while True:
        changes, told = changes_by_file(kept)
        notes |= dict.fromkeys(told)
        failed: dict[tuple[str, int], str] = {}
        for path, by_line in changes.items():
            failed |= {(path, line): why for line, why in _attempt(path, by_line)[2].items()}
        notes |= dict.fromkeys(failed.values())
        partial = {id(plan): _unwritten(plan, changes, failed) for plan in kept}
        if not any(partial.values()):
            break
        for plan in kept:
            if partial[id(plan)]:
                lines = ", ".join(str(line) for line in partial[id(plan)])
                notes[
                    f"{display_path(plan.path)}: the plan for {plan.target} was not written: its change at line "
                    f"{lines} cannot be made here, and a part of a plan is a program that was not measured "
                    "(it may not fit): make every change of its table by hand"
                ] = None
        kept = [plan for plan in kept if not partial[id(plan)]]
    fixed = []
    for path, by_line in sorted(changes.items()):
        made, _ = rewrite(path, by_line)  # every change can be made: no note
        fixed += [made] if made is not None else []
    return fixed, list(notes)


def _unwritten(
    plan: Any, changes: dict[str, dict[int, Change]], failed: dict[tuple[str, int], str]
) -> list[int | None]:
    """The lines of ``plan``'s changes that ``changes`` does not make as it chose (None: a site with
    no line in the linted files)."""
    out: list[int | None] = []
    for row in plan.report["sites"]:
        if row["chosen"] == AS_WRITTEN:
            continue
        line = row["line"]
        made = changes.get(plan.path, {}).get(line) if line is not None else None
        if made != Change(row["chosen"], row["policy"]) or (plan.path, line) in failed:
            out.append(line)
    return out


def rewrite(path: str, changes: dict[int, Change]) -> tuple[FixedFile | None, list[str]]:
    """``path`` with ``changes`` (by site line) made, and what could not be rewritten."""
    source, edits, failed = _attempt(path, changes)
    notes = list(dict.fromkeys(failed.values()))  # a file that cannot be read: one note
    if source is None or not edits:
        return None, notes
    return FixedFile(path, source, source.apply(list(edits.values()))), notes


def _attempt(
    path: str, changes: dict[int, Change]
) -> tuple[SourceFile | Notebook | None, dict[int, TextEdit], dict[int, str]]:
    """The text edit of each change (by line), and why each other one cannot be made."""
    source = read_source(path)
    if isinstance(source, Finding):
        return None, {}, {line: f"{display_path(path)}: {source.message}" for line in changes}
    changes = dict(changes)
    module = cst.parse_module(source.text)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    imports = {
        line
        for s in module.body
        if isinstance(s, cst.SimpleStatementLine)
        for line in module.code_for_node(s).splitlines()
    }
    partial = (
        "functools.partial"
        if "import functools" in imports
        else "partial"
        if "from functools import partial" in imports
        else None
    )
    edits: dict[int, TextEdit] = {}
    failed: dict[int, str] = {}
    model = SemanticModel(module)
    for site in find_sites(model, Values(model).entries):
        line = positions[site.node].start.line
        if line not in changes:
            continue
        change = changes.pop(line)
        where = f"{display_path(path)}:{line}"
        if change.policy is not None and change.policy.startswith(JAX_PREFIX) and "import jax" not in imports:
            failed[line] = f"{where}: set policy={change.policy} (the module does not `import jax`: not rewritten)"
            continue
        made = _edit(site, change, positions, module, partial)
        if isinstance(made, str):
            failed[line] = f"{where}: {made}"
        else:
            edits[line] = made
    failed |= {line: f"{display_path(path)}:{line}: no checkpoint site on that line: not rewritten" for line in changes}
    return source, edits, failed


def _edit(site: RematSite, change: Change, positions: Any, module: cst.Module, partial: str | None) -> TextEdit | str:
    """The text edit for one site, or why there is none; ``partial``: how the module names functools.partial."""
    if change.chosen == "none":
        return _remove(site, positions, module)
    if change.chosen == "prevent_cse=True":
        arg = site.keyword("prevent_cse")
        if arg is None or not (isinstance(arg.value, cst.Name) and arg.value.value == "False"):
            shown = module.code_for_node(arg.value) if arg is not None else "prevent_cse"
            return f"set {shown} to True (not rewritten: it is not a literal False here)"
        return _replace(positions[arg.value], "True")
    arg = site.keyword("policy")
    if arg is not None:
        if not _written_policy(arg.value):
            return (
                f"the policy comes from `{module.code_for_node(arg.value)}`: set it to {change.policy} (not rewritten)"
            )
        return _replace(positions[arg.value], change.policy or "")
    calls = site.argument_calls
    if isinstance(site.node, cst.Decorator) and not calls and partial is not None:  # @jax.checkpoint
        api = site.node.decorator
        return _replace(positions[api], f"{partial}({module.code_for_node(api)}, policy={change.policy})")
    if not calls or not calls[-1].args:
        return (
            f"write the checkpoint as functools.partial(..., policy={change.policy}) (a bare decorator takes no policy)"
        )
    call = calls[-1]
    # The whole call is rewritten by libcst, not text inserted after the last argument: a position
    # excludes a node's own parentheses (after ``(2,)`` it points between ``,`` and ``)``).
    bare = call.with_changes(args=_with_keyword(call.args, "policy", change.policy or "None"), lpar=[], rpar=[])
    return _replace(positions[call], module.code_for_node(bare))


def _with_keyword(args: Sequence[cst.Arg], name: str, value: str) -> list[cst.Arg]:
    """``args`` and ``name=value`` after them, laid out as the last argument is: a trailing comma
    and a line break before the closing parenthesis stay after the new argument."""
    added = cst.Arg(
        cst.parse_expression(value),
        keyword=cst.Name(name),
        equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
    )
    *head, last = args
    if not isinstance(last.comma, cst.Comma):
        return [*head, last, added]
    between = (
        head[-1].comma
        if head and isinstance(head[-1].comma, cst.Comma)
        else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    )
    return [*head, last.with_changes(comma=between), added.with_changes(comma=last.comma)]


def _remove(site: RematSite, positions: Any, module: cst.Module) -> TextEdit | str:
    if isinstance(site.node, cst.Decorator):
        where = positions[site.node]
        return TextEdit(Position(where.start.line, 0), Position(where.end.line + 1, 0), "")
    if site.call is not None and site.target is not None and not site.ref.partials and site.ref.factory is None:
        return _replace(positions[site.call], module.code_for_node(site.target))
    return "remove the checkpoint (its form is not one this fix rewrites)"


def _replace(where: CodeRange, text: str) -> TextEdit:
    return TextEdit(Position(where.start.line, where.start.column), Position(where.end.line, where.end.column), text)


def _written_policy(value: cst.BaseExpression) -> bool:
    """A policy spelled at the call (a ``checkpoint_policies`` attribute or call, a string, None), not
    read from a name or a config field the fix would have to follow."""
    if isinstance(value, (cst.SimpleString, cst.ConcatenatedString)) or (
        isinstance(value, cst.Name) and value.value == "None"
    ):
        return True
    target = value.func if isinstance(value, cst.Call) else value
    return isinstance(target, cst.Attribute) and "checkpoint_policies" in cst.Module([]).code_for_node(target)
