"""What a callable expression denotes where it is used: the checkpoint sites it is, and the function
whose body runs when it is called.

    jax.checkpoint(loss)                      the site, and ``loss``'s def
    loss  (after ``loss = jax.checkpoint(loss)``)    the same, through the binding that reaches the use
    @jax.checkpoint def loss                  the decorator site, and the def
    functools.partial(loss, batch=b)          whatever ``loss`` denotes
    lambda p: loss(p, x)                      the lambda (``wrapped``: the sites of ``loss``)

Names are resolved flow-sensitively but conservatively: ``semantic.SemanticModel`` gives up on a
name bound twice, yet ``loss = jax.checkpoint(loss)`` is how whole functions are checkpointed.
The binding that reaches a use is the last one before it in the same scope (any of them, for a use
inside a nested function: it runs later), and only when that binding is unconditional (not under
``if``/``for``/``while``/``try``/``with``/``match``); otherwise the name denotes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from remat_lint.analysis.semantic import Binding, SemanticModel, child_nodes
from remat_lint.analysis.sites import RematSite
from remat_lint.apis import PARTIAL

Function = cst.FunctionDef | cst.Lambda

_MAX_DEPTH = 8
_CONDITIONAL = (cst.If, cst.For, cst.While, cst.Try, cst.TryStar, cst.With, cst.Match)
_STATEMENT = (cst.BaseSmallStatement, cst.BaseCompoundStatement)


@dataclass(eq=False)
class Denoted:
    """What a callable expression denotes. ``sites``: the checkpoints that wrap the whole callable
    (outermost first); ``function``: the def or lambda that runs; ``wrapped``: for a lambda whose
    body only calls a checkpointed callable, that callable's sites."""

    sites: list[RematSite] = field(default_factory=list)
    function: Function | None = None
    wrapped: list[RematSite] = field(default_factory=list)


class Callables:
    """Resolution of callable expressions to checkpoint sites and functions, for one module."""

    def __init__(self, model: SemanticModel, sites: list[RematSite]) -> None:
        self.model = model
        self._site_of = {id(site.node): site for site in sites}

    def site_of(self, node: cst.CSTNode) -> RematSite | None:
        """The site whose node is ``node`` (a remat call, or a decorator)."""
        return self._site_of.get(id(node))

    def denote(self, expr: cst.CSTNode, depth: int = 0) -> Denoted:
        if depth > _MAX_DEPTH:
            return Denoted()
        model = self.model
        if isinstance(expr, cst.Lambda):
            inner = self.denote(expr.body.func, depth + 1) if isinstance(expr.body, cst.Call) else Denoted()
            return Denoted(function=expr, wrapped=inner.sites)
        if isinstance(expr, cst.Call):
            site = self.site_of(expr)
            if site is not None:
                inner = self.denote(site.target, depth + 1) if site.target is not None else Denoted()
                return Denoted([site, *inner.sites], inner.function)
            if model.qualified_name(expr.func) in PARTIAL and expr.args and not expr.args[0].keyword:
                return self.denote(expr.args[0].value, depth + 1)
            return Denoted()
        if isinstance(expr, cst.Name):
            binding = reaching_binding(model, expr)
            if binding is None:
                return Denoted()
            if binding.kind == "def":
                return self._def(binding.node)  # type: ignore[arg-type]
            if binding.kind == "assign" and binding.value is not None:
                return self.denote(binding.value, depth + 1)
        return Denoted()

    def _def(self, node: cst.FunctionDef) -> Denoted:
        sites = [site for d in node.decorators if (site := self.site_of(d)) is not None]
        return Denoted(sites, node)


def reaching_binding(model: SemanticModel, name: cst.Name) -> Binding | None:
    """The binding of ``name`` that certainly reaches this use, or None."""
    scope = model.scope_of_name.get(id(name), model.module_scope)
    owner = scope.owner_of(name.value)
    if owner is None:
        return None
    bindings = owner.bindings[name.value]
    if len(bindings) == 1 and bindings[0].kind != "assign":
        return bindings[0]
    if any(b.kind not in ("def", "assign") for b in bindings):
        return None
    use = statement_of(model, name)
    if scope is owner:
        bindings = [b for b in bindings if b.node is not use and precedes(model, b.node, use)]
    if not bindings:
        return None
    last = bindings[-1]
    for b in bindings[:-1]:
        if precedes(model, last.node, b.node):
            last = b
    return None if _conditional(model, last.node, owner.node) else last


def statement_of(model: SemanticModel, node: cst.CSTNode) -> cst.CSTNode:
    current: cst.CSTNode | None = node
    while current is not None and not isinstance(current, _STATEMENT):
        current = model.parent(current)
    return current if current is not None else node


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
