"""Whether a file may hold a scan, decided with ``ast`` (no libcst): REM301's part of the
prefilter (prefilter.py). A file that references a scan but no remat API reaches libcst only when
it calls something that may be a scan: a callee whose last name is ``scan`` or a name that may
alias one (an import ``as``, ``s = jax.lax.scan``). Whether the scan runs over layers is REM301's
to decide from what its body does (analysis/scanned_weights.py); no word of the source decides it
here either."""

from __future__ import annotations

import ast
from typing import Iterator

from remat_lint.engine.prefilter.walk import walk

_SCAN = "scan"
_ASSIGNMENTS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)


def may_scan_layers(tree: ast.AST) -> bool:
    """Some call of the module may be a scan."""

    aliases = {_SCAN}
    callees: list[str | None] = []
    renames: list[tuple[str, str | None]] = []
    for node in walk(tree):
        kind = type(node)
        if kind is ast.Call:
            callees.append(_last_name(node.func))  # type: ignore[attr-defined]
        elif kind in _ASSIGNMENTS:
            targets = node.targets if kind is ast.Assign else [node.target]  # type: ignore[attr-defined]
            for target in targets:
                renames.extend((bound, _last_name(value)) for bound, value in _bindings(target, node.value))  # type: ignore[attr-defined]
        elif kind is ast.Import or kind is ast.ImportFrom:
            aliases.update(a.asname for a in node.names if a.asname and a.name.rsplit(".", 1)[-1] == _SCAN)  # type: ignore[attr-defined]
    while True:  # ``s = jax.lax.scan``: the semantic model resolves names bound to a name or attribute
        bound = {n for n, last in renames if last in aliases}
        if bound <= aliases:
            break
        aliases |= bound
    return any(callee in aliases for callee in callees)


def _bindings(target: ast.AST, value: ast.expr | None) -> Iterator[tuple[str, ast.expr]]:
    """The names and attributes an assignment binds (``a``, ``self.layer``), each with its value:
    the matching element when a tuple is unpacked from a tuple (``f, g = a, b``), else the whole."""
    if value is None:
        return
    if isinstance(target, ast.Name):
        yield target.id, value
    elif isinstance(target, ast.Attribute):
        yield target.attr, value
    elif isinstance(target, (ast.Tuple, ast.List)):
        if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
            for element, item in zip(target.elts, value.elts, strict=True):
                yield from _bindings(element, item)
        else:
            for element in target.elts:
                yield from _bindings(element, value)
    elif isinstance(target, ast.Starred):
        yield from _bindings(target.value, value)


def _last_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None
