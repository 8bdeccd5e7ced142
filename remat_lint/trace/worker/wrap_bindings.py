"""Which wrap a call of a checkpointed function goes through, read off the call's source (pure ``ast``).

Two checkpoints of one function (``jax.checkpoint(f)`` and ``jax.checkpoint(f, policy=P)``,
``nn.remat(Block)`` applied twice) make equations whose function, body and policy may match either
wrap. The call that made an equation tells them apart: its callee is a name (``lean(w, x)``), the
instance of one (``Remat()(x)``) or an attribute set in a method (``self.block(x)``), and that name is
bound to a call expression (``lean = jax.checkpoint(dense, policy=P)``). ``bound_calls`` gives the
lines of those expressions; jaxpr_sites.py keeps the one that wraps the equation's body.

Names are looked up in the call's enclosing functions, then the module; an attribute in the methods
of the call's class, through the method's first parameter (whatever its name). A name bound several
times gives every binding: the caller decides only when one of them wraps the body.

Two more questions of the same kind: ``wrap_line``, the wrap a --trace-run replay of a recorded
checkpointed function goes through (the module-level name that holds it), and ``called_spans``, the
helper a wrap's line calls (``lean = checkpointed(dense, P)``), whose own checkpoint it applies.
"""

from __future__ import annotations

import ast
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

Span = tuple[int, int, int, int]  # line, column, end line, end column (UTF-8 bytes, as CPython and ast count)
Scope = ast.FunctionDef | ast.AsyncFunctionDef | None  # None: the module
FOLLOW = 4  # bindings followed from a callee (``self.block`` -> ``Remat`` -> ``nn.remat(Block)``)


@dataclass
class Bindings:
    """A module's call expressions by position and what its names and attributes are bound to."""

    calls: dict[Span, ast.Call] = field(default_factory=dict)
    names: dict[tuple[Scope, str], list[ast.expr]] = field(default_factory=dict)
    attributes: dict[tuple[ast.ClassDef, str], list[ast.expr]] = field(default_factory=dict)
    functions: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.ClassDef | None]] = field(default_factory=list)
    helpers: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = field(default_factory=dict)  # module-level defs


def bound_calls(code: str, span: Span) -> list[int]:
    """The lines of the call expressions that the callee of the call at ``span`` is bound to; [] when
    no call is there or its callee is not a bound name (``jax.checkpoint(f)(x)``, ``layers[0](x)``)."""
    index = _index(code)
    call = index.calls.get(span) if index is not None else None
    if index is None or call is None:
        return []
    enclosing = [(f, c) for f, c in index.functions if _contains(f, span[0])]
    enclosing.sort(key=lambda fc: fc[0].lineno, reverse=True)  # innermost first
    return sorted({value.lineno for value in _values(index, call.func, enclosing, FOLLOW)})


def _module_bindings(code: str, name: str) -> list[int]:
    """The lines of the call expressions ``name`` is bound to at module level (``lean = jax.checkpoint(f)``)."""
    index = _index(code)
    bound = index.names.get((None, name), []) if index is not None else []
    return [value.lineno for value in bound if isinstance(value, ast.Call)]


def wrap_line(module: ModuleType, code: str, checkpointed: Callable[..., Any]) -> int | None:
    """The line of the module-level wrap whose name holds ``checkpointed`` (what ``jax.checkpoint``
    returned, under the --trace-run recorder's wrapper): the wrap a recorded call of it went through;
    None when no one line says."""
    lines = {
        line
        for name, value in vars(module).items()
        if _holds(value, checkpointed)
        for line in _module_bindings(code, name)
    }
    return lines.pop() if len(lines) == 1 else None


def _holds(value: Any, checkpointed: Callable[..., Any]) -> bool:
    try:
        return inspect.unwrap(value, stop=lambda f: f is checkpointed) is checkpointed
    except Exception:  # a user object whose attributes raise, or a cycle of __wrapped__
        return False


def called_spans(code: str, line: int) -> list[tuple[int, int]]:
    """The first and last lines of the module's functions that a call starting at ``line`` calls by
    name: a wrap made by a helper (``lean = checkpointed(dense, P)``) applies the checkpoint in it."""
    index = _index(code)
    if index is None:
        return []
    called = [c.func.id for c in index.calls.values() if c.lineno == line and isinstance(c.func, ast.Name)]
    return [(f.lineno, f.end_lineno or f.lineno) for name in called for f in index.helpers.get(name, [])]


def _values(
    index: Bindings,
    expr: ast.expr,
    enclosing: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.ClassDef | None]],
    depth: int,
) -> list[ast.Call]:
    if depth == 0:
        return []
    if isinstance(expr, ast.Call):  # ``Remat()(x)``: the instance of what ``Remat`` is bound to
        return _values(index, expr.func, enclosing, depth - 1)
    bound: list[ast.expr] = []
    if isinstance(expr, ast.Name):
        for scope in [f for f, _ in enclosing] + [None]:
            bound = index.names.get((scope, expr.id), [])
            if bound:
                break
    elif isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and enclosing:
        method, cls = enclosing[0]
        if cls is not None and _first_param(method) == expr.value.id:
            bound = index.attributes.get((cls, expr.attr), [])
    calls = [value for value in bound if isinstance(value, ast.Call)]
    return calls + [c for value in calls for c in _values(index, value.func, enclosing, depth - 1)]


@functools.lru_cache(maxsize=16)
def _index(code: str) -> Bindings | None:
    index = Bindings()
    try:
        _visit(ast.parse(code), index, None, None)
    except (SyntaxError, ValueError, RecursionError):  # ``a + a + ...`` deeper than the stack: no bindings
        return None
    return index


def _visit(node: ast.AST, index: Bindings, scope: Scope, cls: ast.ClassDef | None, class_body: bool = False) -> None:
    """Record the calls and bindings under ``node``; ``cls``: the class of the method ``scope`` is, if
    it is one; ``class_body``: ``node`` is a class, whose own names no function sees."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            method_of = node if class_body and isinstance(node, ast.ClassDef) else None
            index.functions.append((child, method_of))
            if isinstance(node, ast.Module):
                index.helpers.setdefault(child.name, []).append(child)
            _visit(child, index, child, method_of)
            continue
        if isinstance(child, ast.ClassDef):
            _visit(child, index, scope, None, class_body=True)
            continue
        if isinstance(child, ast.Call) and child.end_lineno is not None and child.end_col_offset is not None:
            index.calls[(child.lineno, child.col_offset, child.end_lineno, child.end_col_offset)] = child
        if isinstance(child, (ast.Assign, ast.AnnAssign)) and child.value is not None and not class_body:
            targets = child.targets if isinstance(child, ast.Assign) else [child.target]
            for target in targets:
                _bind(index, target, child.value, scope, cls)
        _visit(child, index, scope, cls, class_body and isinstance(child, ast.stmt))


def _bind(index: Bindings, target: ast.expr, value: ast.expr, scope: Scope, cls: ast.ClassDef | None) -> None:
    if isinstance(target, ast.Name):
        index.names.setdefault((scope, target.id), []).append(value)
    elif (
        isinstance(target, ast.Attribute)
        and isinstance(target.value, ast.Name)
        and scope is not None
        and cls is not None
        and _first_param(scope) == target.value.id
    ):
        index.attributes.setdefault((cls, target.attr), []).append(value)


def _first_param(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    params = [*function.args.posonlyargs, *function.args.args]
    return params[0].arg if params else None


def _contains(function: ast.FunctionDef | ast.AsyncFunctionDef, line: int) -> bool:
    return function.lineno <= line <= (function.end_lineno or function.lineno)
