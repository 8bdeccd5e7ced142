"""Which bindings of a name reach one of its uses, in source order: the last one before the use in
the same scope, and while that one is conditional (under ``if``/``for``/``while``/``try``/``with``/
``match``), the ones before it (callables.py explains why, bodies.py and the rules use it)."""

from __future__ import annotations

import functools

import libcst as cst

from remat_lint.analysis.semantic import Binding, SemanticModel, child_nodes

_CONDITIONAL = (cst.If, cst.For, cst.While, cst.Try, cst.TryStar, cst.With, cst.Match)


def statement_of(model: SemanticModel, node: cst.CSTNode) -> cst.CSTNode:
    """The statement ``node`` belongs to (itself for a statement): where findings about code in a
    body point."""
    current: cst.CSTNode | None = node
    while current is not None and not isinstance(current, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
        current = model.parent(current)
    return current if current is not None else node


def reaching_bindings(model: SemanticModel, name: cst.Name) -> tuple[list[Binding], bool]:
    """The bindings of ``name`` that may reach this use (the last one before it, and while that
    one is conditional, the ones before it), and whether exactly one certainly does."""
    scope = model.scope_of_name.get(id(name), model.module_scope)
    owner = scope.owner_of(name.value)
    if owner is None:
        return [], False
    bindings = owner.bindings[name.value]
    if len(bindings) == 1 and bindings[0].kind != "assign":
        return bindings, True
    if scope is owner:
        use = statement_of(model, name)
        bindings = [b for b in bindings if b.node is not use and precedes(model, b.node, use)]

    def order(x: Binding, y: Binding) -> int:
        return -1 if precedes(model, x.node, y.node) else 1

    ordered = sorted(bindings, key=functools.cmp_to_key(order))
    reaching: list[Binding] = []
    for binding in reversed(ordered):
        reaching.append(binding)
        if binding.kind == "param" or not _conditional(model, binding.node, owner.node):
            return reaching, len(reaching) == 1
    return reaching, False


def precedes(model: SemanticModel, a: cst.CSTNode, b: cst.CSTNode) -> bool:
    """``a`` comes before ``b`` in source order (neither contains the other)."""
    chain_a = [a, *model.ancestors(a)]
    chain_b = [b, *model.ancestors(b)]
    ids_a = {id(n): i for i, n in enumerate(chain_a)}
    for j, node in enumerate(chain_b):
        i = ids_a.get(id(node))
        if i is None:
            continue
        if i == 0 or j == 0:
            return False
        below_a, below_b = chain_a[i - 1], chain_b[j - 1]
        for child in child_nodes(node):
            if child is below_a:
                return True
            if child is below_b:
                return False
        return False
    return False


def _conditional(model: SemanticModel, node: cst.CSTNode, scope_node: cst.CSTNode) -> bool:
    for ancestor in model.ancestors(node):
        if ancestor is scope_node:
            return False
        if isinstance(ancestor, _CONDITIONAL):
            return True
    return False
