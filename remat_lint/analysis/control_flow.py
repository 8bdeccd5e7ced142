"""Python control flow on the parameters of a checkpointed function, and what those parameters are.

A traced parameter fails in Python control flow (measured, jax 0.10.2):
- ``if p`` / ``while p`` / ``not p`` / ``p and ...`` / ``x if p else y`` / ``assert p`` call
  ``bool(p)``: ``TracerBoolConversionError`` when ``p`` is a traced scalar or array. ``None`` and
  pytree containers (dicts, lists) are not tracers and are fine, so this needs evidence that ``p``
  is a leaf: a ``bool``/``int``/``float``/array annotation, a bool default, or a flag's name
  (``deterministic``, ``train``, ``decode``...);
- ``p < k`` (any ordering) in such a test fails for every traced value (a traced number gives a
  traced bool; ``None`` and containers raise ``TypeError``);
- ``p == k`` needs the same leaf evidence as ``if p``;
- ``range(p)`` raises ``TracerIntegerConversionError``.
``is None`` tests, ``.shape``/``.ndim``/``.dtype``, ``len()`` and ``isinstance()`` are trace-time
facts and never fail.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Literal

import libcst as cst

from remat_lint.analysis.bodies import statement_of
from remat_lint.analysis.semantic import SemanticModel

Use = Literal["truth", "order", "equality", "range"]

BOOL_LIKE_NAMES = frozenset(
    {
        "deterministic",
        "train",
        "training",
        "is_training",
        "is_train",
        "decode",
        "init_cache",
        "use_cache",
        "inference",
        "is_inference",
        "eval_mode",
        "enable_dropout",
        "causal",
        "is_causal",
    }
)
_LEAF_ANNOTATIONS = frozenset({"bool", "int", "float"})
_ARRAY_ANNOTATIONS = frozenset({"Array", "ndarray", "ArrayLike", "Tensor"})
# jaxtyping's dtype-annotated arrays: Float[Array, "b d"].
_JAXTYPING = frozenset({"Float", "Int", "Bool", "Shaped", "Num", "Real", "Inexact", "Integer", "UInt", "Key", "Complex"})


@dataclass(frozen=True)
class ControlUse:
    statement: cst.CSTNode  # the statement to report
    test: cst.CSTNode  # the control-flow expression (for the message)
    param: cst.Param
    use: Use
    construct: str  # how the message names the construct: "`if`", "`and`/`or`", "conditional expression"...


def is_bool_like(param: cst.Param) -> bool:
    default = param.default
    if isinstance(default, cst.Name) and default.value in ("True", "False"):
        return True
    return annotation_name(param) == "bool" or (param.annotation is None and param.name.value in BOOL_LIKE_NAMES)


def is_leaf(param: cst.Param) -> bool:
    """Certainly a scalar or an array when traced (so ``bool()`` of it fails)."""
    return is_bool_like(param) or annotation_name(param) in _LEAF_ANNOTATIONS | _ARRAY_ANNOTATIONS | _JAXTYPING


def is_array_annotated(param: cst.Param) -> bool:
    return annotation_name(param) in _ARRAY_ANNOTATIONS | _JAXTYPING


def annotation_name(param: cst.Param) -> str | None:
    """The last dotted component of a plain annotation (``jax.Array`` -> ``Array``;
    ``Float[Array, "b d"]`` -> ``Float``); None for anything else (``Optional[bool]``...)."""
    if param.annotation is None:
        return None
    node = param.annotation.annotation
    if isinstance(node, cst.Subscript):
        node = node.value
        if not (isinstance(node, (cst.Name, cst.Attribute)) and _last(node) in _JAXTYPING):
            return None
    if isinstance(node, cst.SimpleString):
        text = node.evaluated_value
        return text.rsplit(".", 1)[-1] if isinstance(text, str) and text.replace(".", "").isidentifier() else None
    return _last(node) if isinstance(node, (cst.Name, cst.Attribute)) else None


def _last(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    return node.attr.value if isinstance(node, cst.Attribute) else None


def control_uses(
    model: SemanticModel, nodes: list[cst.CSTNode], params: dict[str, cst.Param]
) -> Iterator[ControlUse]:
    """Python control flow in ``nodes`` (a body) on the parameters in ``params`` that certainly fails
    when they are traced (the leaf evidence for truth and equality tests is checked here)."""
    finder = _Finder(model, params)
    for node in nodes:
        yield from finder.visit(node)


class _Finder:
    def __init__(self, model: SemanticModel, params: dict[str, cst.Param]) -> None:
        self.model = model
        self.params = params

    def visit(self, node: cst.CSTNode) -> Iterator[ControlUse]:
        if isinstance(node, (cst.If, cst.While)):
            yield from self._tested(node.test, node, "`if`" if isinstance(node, cst.If) else "`while`")
        elif isinstance(node, cst.Assert):
            yield from self._tested(node.test, node, "`assert`")
        elif isinstance(node, cst.IfExp):
            yield from self._tested(node.test, node, "conditional expression")
        elif isinstance(node, cst.CompIf):
            yield from self._tested(node.test, node, "comprehension `if`")
        elif isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not) and not self._in_test(node):
            yield from self._tested(node.expression, node, "`not`")
        elif isinstance(node, cst.BooleanOperation) and not self._in_test(node):
            # ``a and b`` calls bool(a); b is returned as it is.
            yield from self._tested(node.left, node, "`and`/`or`")
        elif isinstance(node, (cst.For, cst.CompFor)):
            yield from self._range(node.iter, node)

    def _in_test(self, node: cst.CSTNode) -> bool:
        """Already examined as part of an enclosing test or boolean operation."""
        parent = self.model.parent(node)
        if isinstance(parent, cst.UnaryOperation):
            return isinstance(parent.operator, cst.Not)
        if isinstance(parent, cst.BooleanOperation):
            # The left operand is always tested; the right one only when the whole is.
            return parent.left is node or self._in_test(parent)
        return isinstance(parent, (cst.If, cst.While, cst.Assert, cst.IfExp, cst.CompIf)) and parent.test is node  # type: ignore[union-attr]

    def _tested(self, expr: cst.BaseExpression, at: cst.CSTNode, construct: str) -> Iterator[ControlUse]:
        if isinstance(expr, cst.BooleanOperation):
            yield from self._tested(expr.left, at, construct)
            yield from self._tested(expr.right, at, construct)
        elif isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            yield from self._tested(expr.expression, at, construct)
        elif isinstance(expr, cst.Comparison):
            yield from self._comparison(expr, at, construct)
        else:
            param = self._param(expr)
            if param is not None and is_leaf(param):
                yield ControlUse(statement_of(self.model, at), expr, param, "truth", construct)

    def _comparison(self, expr: cst.Comparison, at: cst.CSTNode, construct: str) -> Iterator[ControlUse]:
        operators = [c.operator for c in expr.comparisons]
        if any(not isinstance(op, (cst.LessThan, cst.GreaterThan, cst.LessThanEqual, cst.GreaterThanEqual, cst.Equal, cst.NotEqual)) for op in operators):
            return  # ``is``/``in`` tests never convert a tracer to bool
        ordering = any(not isinstance(op, (cst.Equal, cst.NotEqual)) for op in operators)
        operands = [expr.left, *(c.comparator for c in expr.comparisons)]
        for operand in operands:
            param = self._param(operand)
            if param is None:
                continue
            if ordering:
                yield ControlUse(statement_of(self.model, at), expr, param, "order", construct)
            elif is_leaf(param):
                yield ControlUse(statement_of(self.model, at), expr, param, "equality", construct)
            return

    def _range(self, iterable: cst.BaseExpression, at: cst.CSTNode) -> Iterator[ControlUse]:
        if not isinstance(iterable, cst.Call) or self.model.qualified_name(iterable.func) != "builtins.range":
            return
        for arg in iterable.args:
            param = self._param(arg.value)
            if param is not None:
                yield ControlUse(statement_of(self.model, at), iterable, param, "range", "`for` loop")
                return

    def _param(self, expr: cst.BaseExpression) -> cst.Param | None:
        if not isinstance(expr, cst.Name):
            return None
        binding = self.model.single_binding(expr)
        param = self.params.get(expr.value)
        return param if binding is not None and binding.node is param else None
