"""One value an expression can hold (``Value``), and the syntax-level readers that the value layer
(``values.py``) and its configuration sources (``config_values.py``) share: literals, call
arguments, unions of possibilities, what a function returns."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import libcst as cst

from remat_lint.analysis.semantic import child_nodes
from remat_lint.apis import Family

Kind = Literal[
    "str",
    "bool",
    "int",
    "float",
    "none",
    "tuple",
    "list",
    "set",
    "policy",
    "factory",
    "callable",
    "imported",
    "imported_field",
    "local_field",
    "imported_item",
    "module_class",
    "module_instance",
]

MAX_DEPTH = 8


@dataclass(frozen=True)
class Value:
    """One value an expression can hold."""

    kind: Kind
    literal: str | bool | int | float | None = None  # str/bool/int/float: the value, when known
    items: tuple[Value, ...] | None = None  # tuple/list/set: the elements, when each is known
    qname: str | None = (
        None  # policy/factory: what it is (``jax.checkpoint_policies.dots_saveable``); imported: as imported
    )
    node: cst.CSTNode | None = None  # where it is spelled (a factory's call, a literal)
    via: str | None = None  # where it comes from when not spelled at the use: ``os.environ.get``...
    # module_class/module_instance (a Module class, an instance of one): ``qname`` is the class's
    # qualified name, ``node`` where the instance is built (its constructor call); ``framework`` the
    # Module's framework, None for a class of another module of the project (as this module imports
    # it: only the project phase can tell whether it is a Module, and of which framework);
    # ``definition`` the class when this module defines it.
    framework: Family | None = None
    definition: cst.ClassDef | None = None

    def sourced(self, via: str) -> Value:
        return self if self.via else replace(self, via=via)


Possible = tuple[Value, ...]


def function_returns(definition: cst.FunctionDef) -> list[cst.BaseExpression | None] | None:
    """The values a function returns (None for a bare ``return`` and for falling off the end);
    None for a generator."""
    returns: list[cst.Return] = []
    if not _collect_returns(definition.body, returns):
        return None
    found: list[cst.BaseExpression | None] = [r.value for r in returns]
    if falls_through(definition.body):
        found.append(None)
    return found


def _collect_returns(node: cst.CSTNode, found: list[cst.Return]) -> bool:
    """Gather the function's own return statements; False when it yields (a generator)."""
    for child in child_nodes(node):
        if isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(child, (cst.Yield, cst.Await)):
            return False
        if isinstance(child, cst.Return):
            found.append(child)
        if not _collect_returns(child, found):
            return False
    return True


def falls_through(body: cst.BaseSuite) -> bool:
    """Whether control can reach the end of a function body (conservatively: unless its last
    statement is a ``return`` or ``raise``)."""
    statements = body.body if isinstance(body, cst.IndentedBlock) else ()
    if not statements:
        return not isinstance(body, cst.SimpleStatementSuite) or not isinstance(body.body[-1], (cst.Return, cst.Raise))
    last = statements[-1]
    return not (isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], (cst.Return, cst.Raise)))


def literal_value(expr: cst.CSTNode) -> Value | None:
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return Value("str", value, node=expr) if isinstance(value, str) else None
    if isinstance(expr, cst.Integer):
        return Value("int", int(expr.evaluated_value), node=expr)
    if isinstance(expr, cst.Float):
        return Value("float", float(expr.evaluated_value), node=expr)
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return Value("bool", expr.value == "True", node=expr)
    if isinstance(expr, cst.Name) and expr.value == "None":
        return Value("none", node=expr)
    return None


def evaluated(expr: cst.CSTNode) -> str | None:
    value = (
        getattr(expr, "evaluated_value", None) if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)) else None
    )
    return value if isinstance(value, str) else None


def union(a: Possible | None, b: Possible | None) -> Possible | None:
    if a is None or b is None:
        return None
    return a + tuple(v for v in b if v not in a)


def keyword_value(call: cst.Call, name: str) -> cst.BaseExpression | None:
    return next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def call_argument(call: cst.Call, index: int | None, name: str) -> cst.BaseExpression | None:
    """The argument ``call`` passes as ``name=`` or at position ``index`` (None: keyword only)."""
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    if index is None:
        return keyword_value(call, name)
    return keyword_value(call, name) or (positional[index] if len(positional) > index else None)
