"""Whether a scan's body applies the scanned slice as weights to its carry (REM301's "over layers").

A scan over layers feeds the carry through each layer's parameters, which the slice of ``xs``
gives each step (``c @ p``, ``jnp.einsum("...", c, p["w"])``). A scan over time steps combines
its data slice with the carry by other means (``h * x``, ``h @ W + x`` with ``W`` bound outside).
This reads what the body does with its two parameters, never how anything is spelled: values
derived from the carry and from the slice are followed through assignments and ``for`` loops in
the body, and into the same-module functions it passes them to (up to ``DEPTH`` calls deep).
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from remat_lint.analysis.bodies import Bodies, Function
from remat_lint.analysis.semantic import SemanticModel, child_nodes
from remat_lint.apis.jax import CONTRACTIONS

DEPTH = 3


def applies_scanned_weights(model: SemanticModel, bodies: Bodies, function: Function) -> bool:
    """``function`` is a scan body: its last two positional parameters receive the carry and the
    slice (parameters before them are bound: ``partial(step, params)``)."""
    params = [p.name.value for p in [*function.params.posonly_params, *function.params.params]]
    if len(params) < 2:
        return False
    return _Reader(model, bodies).applies(function, {params[-2]}, {params[-1]}, DEPTH)


class _Reader:
    def __init__(self, model: SemanticModel, bodies: Bodies) -> None:
        self.model = model
        self.bodies = bodies

    def applies(self, function: Function, carry: set[str], weights: set[str], depth: int) -> bool:
        carry, weights = _followed(function, carry), _followed(function, weights)
        for node in _nodes(function.body):
            if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.MatrixMultiply):
                if _crosses([node.left, node.right], carry, weights):
                    return True
            elif isinstance(node, cst.Call) and self._applies_in_call(node, carry, weights, depth):
                return True
        return False

    def _applies_in_call(self, call: cst.Call, carry: set[str], weights: set[str], depth: int) -> bool:
        operands = [a.value for a in call.args]
        if self.model.qualified_name(call.func) in CONTRACTIONS:
            return _crosses(operands, carry, weights)
        callee = self.bodies.callee(call)
        if callee is None or depth == 0 or not isinstance(callee, (cst.FunctionDef, cst.Lambda)):
            return False
        names = [p.name.value for p in [*callee.params.posonly_params, *callee.params.params]]
        passed = [(names[i], a.value) for i, a in enumerate(call.args) if a.keyword is None and i < len(names)]
        passed += [(a.keyword.value, a.value) for a in call.args if a.keyword is not None]
        inner_carry = {name for name, value in passed if _mentions(value, carry)}
        inner_weights = {name for name, value in passed if _mentions(value, weights)}
        return bool(inner_carry and inner_weights) and self.applies(callee, inner_carry, inner_weights, depth - 1)


def _crosses(operands: list[cst.BaseExpression], carry: set[str], weights: set[str]) -> bool:
    """One operand derives from the carry and another from the slice."""
    return any(
        _mentions(a, carry) and _mentions(b, weights)
        for i, a in enumerate(operands)
        for j, b in enumerate(operands)
        if i != j
    )


def _followed(function: Function, sources: set[str]) -> set[str]:
    """``sources`` and the local names assigned (or looped over) from values derived from them."""
    found = set(sources)
    bindings = list(_bindings(function.body))
    while True:
        grown = found | {name for targets, value in bindings if _mentions(value, found) for name in targets}
        if grown == found:
            return found
        found = grown


def _bindings(body: cst.CSTNode) -> Iterator[tuple[set[str], cst.BaseExpression]]:
    for node in _nodes(body):
        if isinstance(node, cst.Assign):
            yield {n for t in node.targets for n in _names(t.target)}, node.value
        elif isinstance(node, (cst.AnnAssign, cst.AugAssign)) and node.value is not None:
            yield _names(node.target), node.value
        elif isinstance(node, cst.For):
            yield _names(node.target), node.iter


def _mentions(expr: cst.CSTNode, names: set[str]) -> bool:
    return bool(_names(expr) & names)


def _names(expr: cst.CSTNode) -> set[str]:
    """The variables an expression reads (``p`` in ``p.w``, ``p["w"]``), not attribute or keyword names."""
    found = set()
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            found.add(node.value)
        elif isinstance(node, cst.Attribute):
            stack.append(node.value)
        elif isinstance(node, cst.Arg):
            stack.append(node.value)
        else:
            stack.extend(child_nodes(node))
    return found


def _nodes(root: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(child_nodes(node))
