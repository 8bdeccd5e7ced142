"""Python control flow on the parameters of a checkpointed function, and what those parameters are.

A traced parameter fails in Python control flow (measured, jax 0.10.2):
- ``if p`` / ``while p`` / ``not p`` / ``p and ...`` / ``x if p else y`` / ``assert p`` call
  ``bool(p)``: ``TracerBoolConversionError`` when ``p`` is a traced scalar or array. ``None`` and
  pytree containers (dicts, lists) are not tracers and are fine, so this needs evidence that ``p``
  is a leaf: a ``bool``/``int``/``float``/array annotation, a bool default, or a flag's name
  (``deterministic``, ``train``, ``decode``..., ``use_*``/``is_*``/``enable_*`` not defaulting to None);
- ``p < k`` (any ordering) in such a test fails for every traced value (a traced number gives a
  traced bool; ``None`` and containers raise ``TypeError``);
- ``p == k`` needs the same leaf evidence as ``if p``;
- ``range(p)`` raises ``TracerIntegerConversionError``.
``is None`` tests, ``.shape``/``.ndim``/``.dtype``, ``len()`` and ``isinstance()`` are trace-time
facts and never fail. A parameter re-bound only to steps of itself (``steps -= 1`` in a ``while``)
stays traced; any other re-binding reaching the test makes it unknown.

A parameter handed on as it is counts too, reported at the call: to the flag of a layer that
tests it (``analysis/layers``: ``deterministic`` of a Flax linen or NNX ``Dropout`` or linen
attention with a nonzero rate (a literal, a module constant or, when asked, a Module field), ``inference`` of
``eqx.nn.Dropout``, ``use_running_average`` of ``nn.BatchNorm``; built in the call, bound to a name or to ``self.<attr>``), or to a parameter of
a same-module function or Module class (``MlpBlock(cfg)(x, deterministic)``) that fails there.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator, Literal

import libcst as cst

from remat_lint.analysis.bodies import method, positional_params
from remat_lint.analysis.layers import flag_argument, layer_of
from remat_lint.analysis.module_fields import HeldField
from remat_lint.analysis.reaching import statement_of
from remat_lint.analysis.semantic import SemanticModel, child_nodes, is_step
from remat_lint.analysis.values import Values
from remat_lint.apis.linen import COMPACT

Use = Literal["truth", "order", "equality", "range"]

_MAX_CALL_DEPTH = 3
_LEAF_ANNOTATIONS = frozenset({"bool", "int", "float"})
_ARRAY_ANNOTATIONS = frozenset({"Array", "ndarray", "ArrayLike", "Tensor"})
# jaxtyping's dtype-annotated arrays: Float[Array, "b d"].
_JAXTYPING = frozenset(
    {"Float", "Int", "Bool", "Shaped", "Num", "Real", "Inexact", "Integer", "UInt", "Key", "Complex"}
)


@dataclass(frozen=True)
class ControlUse:
    statement: cst.CSTNode  # the statement to report
    test: cst.CSTNode  # the control-flow expression (for the message)
    param: cst.Param
    use: Use
    construct: str  # how the message names the construct: "`if`", "`and`/`or`", "conditional expression"...
    field: HeldField | None = None  # the Module field the tested layer's rate is read from (``layers``)


def is_bool_like(param: cst.Param) -> bool:
    """A flag by its declaration: annotated ``bool`` or defaulting to ``True``/``False`` (its name
    never counts; ``truth_flags`` finds flags by their use)."""
    default = param.default
    return (isinstance(default, cst.Name) and default.value in ("True", "False")) or annotation_name(param) == "bool"


def plain_params(
    values: Values, nodes: list[cst.CSTNode], params: dict[str, cst.Param], fields: bool = False
) -> frozenset[str]:
    """The parameters ``nodes`` (a body) use as flags, whatever their names: tested (``if p``,
    ``not p``, ``p and q``, ``a if p else b``, ``assert p``) or given to a layer's flag
    (``Dropout(...)(x, deterministic=p)``), and otherwise only handed on as arguments. One also
    compared, indexed, iterated, computed with or stored (``cache["k"]``, ``mask is None``), or
    defaulting to None (an optional object), may be a container: its truth value raises nothing.
    ``fields``: a layer whose rate is a Module field counts (``layers.layer_of``)."""
    tested: set[str] = set()
    used_otherwise: set[str] = set()
    for node in nodes:
        if isinstance(node, cst.Name) and node.value in params and not _not_a_reference(values.model, node):
            use = _flag_use(values, node, fields)
            (tested if use == "tested" else used_otherwise if use is None else set()).add(node.value)
    optional = {name for name, p in params.items() if isinstance(p.default, cst.Name) and p.default.value == "None"}
    return frozenset(tested - used_otherwise - optional)


# Operators that no container has (a list, tuple, dict, str or None): ``n - 1``, ``x / n``, ``-n``.
_NUMERIC_OPERATORS = (
    cst.Subtract,
    cst.Divide,
    cst.FloorDivide,
    cst.Power,
    cst.MatrixMultiply,
    cst.LeftShift,
    cst.RightShift,
)
_NUMERIC_ASSIGNS = (
    cst.SubtractAssign,
    cst.DivideAssign,
    cst.FloorDivideAssign,
    cst.PowerAssign,
    cst.MatrixMultiplyAssign,
    cst.LeftShiftAssign,
    cst.RightShiftAssign,
)


def _numeric_params(model: SemanticModel, nodes: list[cst.CSTNode], params: dict[str, cst.Param]) -> frozenset[str]:
    """The parameters ``nodes`` (a body) compute with by an operator that no container has
    (``n - 1``, ``n -= 1``, ``x / n``, ``-n``), where every binding reaching the operand is the
    parameter or a step of it: a number or an array, whose truth value raises when it is traced.
    Any other value of a checkpointed function's argument is a pytree container or no JAX type."""
    found: set[str] = set()
    for node in nodes:
        operands: tuple[cst.BaseExpression, ...]
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _NUMERIC_OPERATORS):
            operands = (node.left, node.right)
        elif isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.BitInvert)):
            operands = (node.expression,)
        elif isinstance(node, cst.AugAssign) and isinstance(node.operator, _NUMERIC_ASSIGNS):
            operands = (node.target,)
        else:
            continue
        found.update(o.value for o in operands if isinstance(o, cst.Name) and _is_param(model, o, params))
    return frozenset(found)


def _scalars(values: Values, nodes: list[cst.CSTNode], params: dict[str, cst.Param], fields: bool) -> frozenset[str]:
    """The parameters ``nodes`` (a body) show to be scalars or arrays: flags, or numbers."""
    return plain_params(values, nodes, params, fields) | _numeric_params(values.model, nodes, params)


def _is_param(model: SemanticModel, name: cst.Name, params: dict[str, cst.Param]) -> bool:
    """Every binding that reaches ``name`` is the parameter of its name or a step of it
    (``steps = steps - 1``, ``n -= 1``: a traced number stays traced)."""
    param = params.get(name.value)
    bindings = model.bindings_at(name)
    if param is None or not bindings or not any(b.node is param for b in bindings):
        return False
    return all(b.node is param or is_step(b, name.value) for b in bindings)


def is_flag(values: Values, nodes: list[cst.CSTNode], param: cst.Param) -> bool:
    """Declared a flag (``is_bool_like``), or used as one by ``nodes`` (``plain_params``)."""
    return is_bool_like(param) or param.name.value in plain_params(values, nodes, {param.name.value: param})


def _not_a_reference(model: SemanticModel, name: cst.Name) -> bool:
    """``f(p=...)``'s keyword, ``x.p``'s attribute: the parameter's name, not the parameter."""
    parent = model.parent(name)
    return isinstance(parent, (cst.Arg, cst.Attribute)) and name in (
        getattr(parent, "keyword", None),
        getattr(parent, "attr", None),
    )


def _flag_use(values: Values, name: cst.Name, fields: bool) -> str | None:
    """ "tested", "handed on" (an argument of another call), or None (any other use)."""
    model = values.model
    parent = model.parent(name)
    if isinstance(parent, (cst.If, cst.While, cst.IfExp, cst.Assert, cst.CompIf)):
        return "tested" if parent.test is name else None
    if isinstance(parent, cst.BooleanOperation) or (
        isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not)
    ):
        return "tested"
    if isinstance(parent, cst.Arg) and parent.value is name:
        call = model.parent(parent)
        layer = layer_of(values, call, fields) if isinstance(call, cst.Call) else None
        return "tested" if layer is not None and flag_argument(call, layer) is name else "handed on"  # type: ignore[arg-type]  # a layer is only found for a Call
    return None


def is_leaf(param: cst.Param) -> bool:
    """Certainly a scalar or an array when traced (so ``bool()`` of it fails)."""
    return is_bool_like(param) or annotation_name(param) in _LEAF_ANNOTATIONS | _ARRAY_ANNOTATIONS | _JAXTYPING


def is_array_like(param: cst.Param) -> bool:
    """An array argument: annotated as an array, or a required, unannotated, non-flag parameter."""
    if is_bool_like(param):
        return False
    if param.annotation is None:
        return param.default is None
    return annotation_name(param) in ("Array", "ndarray", "ArrayLike", "Tensor", "Float", "Int", "Shaped")


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


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(list(child_nodes(current))))


def _last(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    return node.attr.value if isinstance(node, cst.Attribute) else None


def control_uses(
    values: Values,
    nodes: list[cst.CSTNode],
    params: dict[str, cst.Param],
    leaves: frozenset[str] = frozenset(),
    fields: bool = False,
) -> Iterator[ControlUse]:
    """Python control flow in ``nodes`` (a body) on the parameters in ``params`` that certainly fails
    when they are traced (the leaf evidence for truth and equality tests is checked here; ``leaves``
    names parameters known to be scalars from elsewhere: a literal passed by a call; ``fields``: a
    layer whose rate is held in a Module field counts, and the use names the field)."""
    finder = _Finder(values, params, leaves=leaves | _scalars(values, nodes, params, fields), fields=fields)
    for node in nodes:
        yield from finder.visit(node)


class _Finder:
    def __init__(
        self,
        values: Values,
        params: dict[str, cst.Param],
        depth: int = 0,
        leaves: frozenset[str] = frozenset(),
        fields: bool = False,
    ) -> None:
        self.values = values
        self.model = values.model
        self.params = params
        self.depth = depth
        self.leaves = leaves
        self.fields = fields

    def _leaf(self, param: cst.Param) -> bool:
        return is_leaf(param) or param.name.value in self.leaves

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
        elif isinstance(node, cst.Call):
            yield from self._flax_layer(node)
            yield from self._handed_on(node)

    def _flax_layer(self, call: cst.Call) -> Iterator[ControlUse]:
        """``nn.Dropout(0.1)(x, deterministic=p)``, ``nn.Dropout(0.1, deterministic=p)(x)``,
        ``nn.BatchNorm(use_running_average=p)(x)``, ``self.dropout(x, deterministic=p)`` of an
        ``nnx.Dropout``, ``drop(x, key=k, inference=p)`` of an ``eqx.nn.Dropout`` (``layers``)."""
        layer = layer_of(self.values, call, self.fields)
        flag = flag_argument(call, layer) if layer is not None else None
        if layer is not None and isinstance(flag, cst.Name):  # ``not p`` is reported as a ``not`` already
            keyword = layer.spec.flag
            for use in self._tested(flag, call, f"`if {keyword}` in `{layer.name}`"):
                yield replace(use, field=layer.field)

    def _handed_on(self, call: cst.Call) -> Iterator[ControlUse]:
        """A parameter passed as it is to a same-module function (``helper(x, p)``) or Module
        (``Block(cfg)(x, p)``) that uses it in failing control flow."""
        if self.depth >= _MAX_CALL_DEPTH:
            return
        callee, skip = self._callee(call)
        if callee is None:
            return
        if any(a.star for a in call.args):
            return
        params = positional_params(callee)[skip:]
        by_name = {p.name.value: p for p in (*params, *callee.params.kwonly_params)}
        scope = self.model.functions[id(callee)].scope
        position = -1
        for arg in call.args:
            position += arg.keyword is None
            mine = self._param(arg.value)
            if mine is None:
                continue
            if arg.keyword is not None:
                theirs = by_name.get(arg.keyword.value)
            else:
                theirs = params[position] if position < len(params) else None
            if theirs is None or len(scope.bindings.get(theirs.name.value, ())) != 1:
                continue  # not received, or rebound there (``deterministic = nn.merge_param(...)``)
            body = list(_walk(callee.body))
            received = {theirs.name.value: theirs}
            inner = _Finder(
                self.values,
                received,
                self.depth + 1,
                leaves=_scalars(self.values, body, received, self.fields),
                fields=self.fields,
            )
            use = next((u for n in body for u in inner.visit(n)), None)
            if use is not None and (use.use in ("order", "range") or self._leaf(mine)):  # ours may be a pytree
                name = self.model.module.code_for_node(call.func if skip == 0 else call.func.func)  # type: ignore[attr-defined]  # skip 1: ``Block(cfg)(x)``, whose func is a Call
                yield ControlUse(
                    statement_of(self.model, call), arg.value, mine, use.use, f"{use.construct} in `{name}`", use.field
                )

    def _callee(self, call: cst.Call) -> tuple[cst.FunctionDef | None, int]:
        """The same-module function ``call`` calls, and how many of its leading parameters are not
        the call's arguments (a Module's ``self``)."""
        definition = self.model.definition(call.func)
        if isinstance(definition, cst.FunctionDef) and self.model.functions[id(definition)].class_node is None:
            return (definition, 0) if not definition.decorators else (None, 0)  # a decorator may transform it
        if isinstance(call.func, cst.Call):  # ``Block(cfg)(x, p)``: the instance's ``__call__``
            cls = self.model.definition(call.func.func)
            if isinstance(cls, cst.ClassDef) and not cls.decorators:
                found = method(self.model, cls, "__call__")
                plain = found is not None and all(
                    self.model.qualified_name(d.decorator) == COMPACT for d in found.decorators
                )
                return (found, 1) if plain else (None, 0)
        return None, 0

    def _in_test(self, node: cst.CSTNode) -> bool:
        """Already examined as part of an enclosing test or boolean operation."""
        parent = self.model.parent(node)
        if isinstance(parent, cst.UnaryOperation):
            return isinstance(parent.operator, cst.Not)
        if isinstance(parent, cst.BooleanOperation):
            # The left operand is always tested; the right one only when the whole is.
            return parent.left is node or self._in_test(parent)
        return isinstance(parent, (cst.If, cst.While, cst.Assert, cst.IfExp, cst.CompIf)) and parent.test is node

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
            if param is not None and self._leaf(param):
                yield ControlUse(statement_of(self.model, at), expr, param, "truth", construct)

    def _comparison(self, expr: cst.Comparison, at: cst.CSTNode, construct: str) -> Iterator[ControlUse]:
        operators = [c.operator for c in expr.comparisons]
        orders = (cst.LessThan, cst.GreaterThan, cst.LessThanEqual, cst.GreaterThanEqual, cst.Equal, cst.NotEqual)
        if any(not isinstance(op, orders) for op in operators):
            return  # ``is``/``in`` tests never convert a tracer to bool
        ordering = any(not isinstance(op, (cst.Equal, cst.NotEqual)) for op in operators)
        operands = [expr.left, *(c.comparator for c in expr.comparisons)]
        for operand in operands:
            param = self._param(operand)
            if param is None:
                continue
            if ordering:
                yield ControlUse(statement_of(self.model, at), expr, param, "order", construct)
            elif self._leaf(param):
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
        """The parameter ``expr`` names, when every binding that reaches it is the parameter or a
        step of it (``steps = steps - 1``, ``n -= 1``: a traced number stays traced)."""
        if not isinstance(expr, cst.Name) or not _is_param(self.model, expr, self.params):
            return None
        return self.params[expr.value]
