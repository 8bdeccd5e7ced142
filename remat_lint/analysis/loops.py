"""Loop bodies: the functions JAX traces once and runs per iteration (scan, fori_loop, while_loop,
map, Flax/Haiku/NNX scans), and the functions mapped by ``vmap``.

    jax.lax.scan(body, init, xs)              body (argument 0; ``f=`` too)
    jax.lax.fori_loop(lo, hi, body, init)     body (argument 2)
    jax.lax.while_loop(cond, body, init)      body (argument 1)
    nn.scan(nn.remat(Block), ...)             the remat site (Flax lifts the class)
    @nnx.scan(in_axes=...) def f              f, with the remat decorators below (decorator factory)
    jax.vmap(f) / nnx.vmap(f) / hk.vmap(f)    f, as a mapped (not looped) function (also @jax.vmap)

Each body expression is resolved with ``callables``: a checkpoint used as a body directly
(``jax.lax.scan(jax.checkpoint(body), ...)``), through a name (``body = jax.checkpoint(body)``) or
as a decorator counts. ``in_body`` tells whether code runs inside such a function (lexically,
nested functions included), or inside a Python ``for``/``while`` loop or a comprehension: per
iteration, per chunk, per microbatch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import libcst as cst

from remat_lint.analysis.callables import Callables, Denoted
from remat_lint.analysis.semantic import SemanticModel
from remat_lint.analysis.sites import RematSite
from remat_lint.apis import LOOP_APIS, PARTIAL, VMAP_APIS

_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


@dataclass(eq=False)
class LoopBody:
    api: str  # the loop (or vmap) API's qualified name
    kind: Literal["loop", "vmap"]
    call: cst.Call | cst.Decorator  # the loop call (a decorator for ``@jax.vmap``)
    expr: cst.BaseExpression  # the body expression as written
    denoted: Denoted


class Loops:
    """Every loop and vmap call of a module, with what their bodies denote."""

    def __init__(self, model: SemanticModel, callables: Callables) -> None:
        self.model = model
        self.bodies: list[LoopBody] = []
        self.loop_calls: list[cst.Call] = []
        for call in model.calls:
            qname = model.qualified_name(call.func)
            if qname in LOOP_APIS and isinstance(model.parent(call), cst.Decorator):
                self.loop_calls.append(call)
                self._add_decorated(call, qname, callables)
            elif qname in LOOP_APIS:
                self.loop_calls.append(call)
                self._add(call, qname, "loop", LOOP_APIS[qname], callables)
            elif qname in VMAP_APIS:
                self._add(call, qname, "vmap", VMAP_APIS[qname], callables)
        for info in model.functions.values():
            self._add_vmapped(info.node)
        loops = [b for b in self.bodies if b.kind == "loop"]
        self._body_sites = {id(s) for b in loops for s in b.denoted.sites}
        self._body_functions = {id(b.denoted.function) for b in self.bodies if b.denoted.function is not None}
        self._body_exprs = {id(b.expr) for b in self.bodies}

    def _add(
        self, call: cst.Call, qname: str, kind: Literal["loop", "vmap"], where: tuple[int, str], callables: Callables
    ) -> None:
        expr = body_argument(call, *where)
        if expr is not None:
            self.bodies.append(LoopBody(qname, kind, call, expr, callables.denote(expr)))

    def _add_decorated(self, call: cst.Call, qname: str, callables: Callables) -> None:
        """``@nnx.scan(in_axes=...)`` on a def: the def is the body, wrapped by the remat
        decorators below the loop's."""
        decorator = self.model.parent(call)
        function = self.model.parent(decorator)
        if (
            not isinstance(decorator, cst.Decorator)
            or not isinstance(function, cst.FunctionDef)
            or body_argument(call, *LOOP_APIS[qname]) is not None
        ):
            return
        below = function.decorators[function.decorators.index(decorator) + 1 :]
        sites = [s for d in below if (s := callables.site_of(d)) is not None]
        self.bodies.append(LoopBody(qname, "loop", call, function.name, Denoted(sites, function)))

    def _add_vmapped(self, function: cst.FunctionDef | cst.Lambda) -> None:
        """``@jax.vmap`` / ``@functools.partial(jax.vmap, in_axes=...)`` on a def."""
        if not isinstance(function, cst.FunctionDef):  # a lambda has no decorators
            return
        for decorator in function.decorators:
            expr = decorator.decorator
            if isinstance(expr, cst.Call) and self.model.qualified_name(expr.func) in PARTIAL and expr.args:
                expr = expr.args[0].value
            qname = self.model.qualified_name(expr)
            if qname in VMAP_APIS:
                body = LoopBody(qname, "vmap", decorator, function.name, Denoted(function=function))
                self.bodies.append(body)

    @property
    def has_loops(self) -> bool:
        """The module calls some loop API (a loop body may be anywhere in it)."""
        return bool(self.loop_calls)

    def is_loop_body(self, site: RematSite) -> bool:
        """The checkpoint (its result) is used as the body of a loop in this module."""
        return id(site) in self._body_sites

    def in_body(self, node: cst.CSTNode, python_loops: bool = True) -> bool:
        """``node`` runs per iteration or per mapped element: inside a loop or vmap body function,
        in the body expression itself, in a Python loop (unless not ``python_loops``) or in a
        comprehension."""
        child = node
        for ancestor in self.model.ancestors(node):
            if id(child) in self._body_exprs or id(ancestor) in self._body_functions:
                return True
            if python_loops and isinstance(ancestor, (cst.For, cst.While)) and child is ancestor.body:
                return True
            if isinstance(ancestor, _COMPREHENSIONS):
                return True
            child = ancestor
        return False


def body_argument(call: cst.Call, position: int, keyword: str) -> cst.BaseExpression | None:
    """The argument at ``position`` (or passed as ``keyword``); None when ``*args`` hides it."""
    positional = []
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is not None:
            if arg.keyword.value == keyword:
                return arg.value
        else:
            positional.append(arg.value)
    return positional[position] if position < len(positional) else None
