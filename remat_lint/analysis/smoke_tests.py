"""Code that exercises a module rather than being it: the body of ``if __name__ == "__main__":``
that does not train, a ``with mock.patch...`` block, a ``test_*`` function. Such code differentiates
a checkpointed function on purpose, to check that gradients flow or to count traces (real-world
trap T7), so the placement rules (REM101-REM103, REM301) neither report it nor count it as a use.

A ``__main__`` block that runs a ``for``/``while`` loop or updates parameters (an ``optax`` call,
``state.apply_gradients(...)``) is a script's entry point, not a smoke test: training scripts run
their steps there (``for step in range(n): params = update(params, ...)``), while a module's
self-check computes a gradient once and prints or asserts it.
"""

from __future__ import annotations

import libcst as cst

from remat_lint.analysis.semantic import SemanticModel, child_nodes
from remat_lint.apis import optax

_MOCK_PREFIXES = ("unittest.mock.", "mock.")
_UPDATE_METHODS = frozenset({"apply_gradients", "apply_updates"})  # Flax TrainState, optax


def in_smoke_test(model: SemanticModel, node: cst.CSTNode) -> bool:
    child = node
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, cst.If) and child is ancestor.body and _is_main_guard(ancestor.test):
            return not _trains(model, ancestor.body)
        if (
            isinstance(ancestor, cst.With)
            and child is ancestor.body
            and any(_is_mock(model, i.item) for i in ancestor.items)
        ):
            return True
        if isinstance(ancestor, cst.FunctionDef) and ancestor.name.value.startswith("test"):
            return True
        child = ancestor
    return False


def _trains(model: SemanticModel, body: cst.BaseSuite) -> bool:
    stack: list[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.For, cst.While)) or (isinstance(node, cst.Call) and _updates_parameters(model, node)):
            return True
        if not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            stack.extend(child_nodes(node))
    return False


def _updates_parameters(model: SemanticModel, call: cst.Call) -> bool:
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in _UPDATE_METHODS:
        return True
    return (model.qualified_name(call.func) or "").startswith(optax.PREFIX)


def _is_main_guard(test: cst.BaseExpression) -> bool:
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    target = test.comparisons[0]
    sides = (test.left, target.comparator)
    names = [s for s in sides if isinstance(s, cst.Name) and s.value == "__name__"]
    strings = [s for s in sides if isinstance(s, cst.SimpleString) and s.evaluated_value == "__main__"]
    return isinstance(target.operator, cst.Equal) and len(names) == 1 and len(strings) == 1


def _is_mock(model: SemanticModel, item: cst.BaseExpression) -> bool:
    if not isinstance(item, cst.Call):
        return False
    qname = model.qualified_name(item.func) or ""
    return qname.startswith(_MOCK_PREFIXES)
