"""Differentiated callables: what ``jax.grad`` and its relatives are applied to, in every form.

    jax.grad(loss)                              a call (also ``fun=loss``)
    @jax.grad / @nnx.grad(argnums=1) / @functools.partial(jax.value_and_grad, has_aux=True)
                                                a decorator: the def, wrapped by the remat
                                                decorators below it (``@jax.grad @jax.checkpoint``)
    functools.partial(jax.grad, argnums=1)(loss), g = partial(...); g(loss), nnx.grad(argnums=1)(loss)

The differentiated expression is resolved with ``callables`` (a def, a lambda, a checkpoint call
inline, a re-bound ``loss = jax.checkpoint(loss)``).

``kind`` is what the transform does with the function's primal output, which decides what a
checkpoint of the whole function costs (measured on jax 0.10.2, tests/jax_claims/test_grad.py):
``grad`` (grad, jacrev: the output is unused, a whole-function checkpoint compiles to the same
program), ``value_and_grad`` (value_and_grad, vjp, and grad with ``has_aux``: the output is
returned, so the forward runs twice), ``forward`` (jacfwd: forward mode keeps no residuals) and ``hessian`` (forward over
reverse).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import libcst as cst

from remat_lint.analysis.bodies import Bodies
from remat_lint.analysis.callables import Callables, Denoted
from remat_lint.analysis.loops import body_argument
from remat_lint.analysis.semantic import SemanticModel
from remat_lint.analysis.sites import RematSite
from remat_lint.apis import DIFF_APIS, PARTIAL, VJPS, DiffApi, policy_info
from remat_lint.apis.jax import NUMPY_REDUCTIONS

_MAX_DEPTH = 8
_REDUCTIONS = frozenset({"sum", "mean"})


@dataclass(eq=False)
class Differentiation:
    api: DiffApi
    node: cst.Call | cst.Decorator  # the applying call, or the decorator
    target: cst.CSTNode  # the differentiated expression, or the decorated def
    denoted: Denoted  # what it is: checkpoint sites wrapping it whole, and its function


class Differentiations:
    """Every differentiation of a module."""

    def __init__(self, model: SemanticModel, callables: Callables) -> None:
        self.model = model
        self.all: list[Differentiation] = list(self._find(callables))
        self._nested: set[int] | None = None

    def under_grad(self, bodies: Bodies, skip: Callable[[Differentiation], bool] = lambda d: False) -> set[int]:
        """The ids of the functions differentiated here (except ``skip``'s) and of the same-module
        functions they call, transitively."""
        stack = [d.denoted.function for d in self.all if d.denoted.function is not None and not skip(d)]
        seen: set[int] = set()
        while stack:
            function = stack.pop()
            if id(function) not in seen:
                seen.add(id(function))
                stack.extend(c for c in map(bodies.callee, bodies.calls(function)) if c is not None)
        return seen

    def first_order(self, d: Differentiation, bodies: Bodies) -> bool:
        """The gradient is not itself differentiated in this module (forces from ``grad(energy)``
        that a loss trains on, meta-learning), which changes what a checkpoint inside costs: it is
        not the target of another differentiation, nor computed by a function one differentiates.
        Decided by what the code does; the functions' and variables' names never count. A function
        that returns a sum or mean of a gradient it takes is a loss term (forces in an energy loss,
        a gradient penalty): whoever trains on it differentiates the gradient again."""
        if self._nested is None:
            self._nested = self.under_grad(bodies) | {id(other.target) for other in self.all}
        # A call may itself be another differentiation's target; a decorator is inside its own def.
        start = d.node if isinstance(d.node, cst.Call) else d.target
        chain = [start] if isinstance(d.node, cst.Call) else []
        if any(id(a) in self._nested for a in (*chain, *self.model.ancestors(start))):
            return False
        return not (isinstance(d.node, cst.Call) and self._reduced_in_return(d.node))

    def _reduced_in_return(self, call: cst.Call) -> bool:
        """The function around ``call`` returns a reduction (``.sum()``, ``jnp.mean``...) of a value
        computed from it: directly, or through a name assigned from it in that function."""
        function = next((a for a in self.model.ancestors(call) if isinstance(a, (cst.FunctionDef, cst.Lambda))), None)
        if not isinstance(function, cst.FunctionDef):
            return False
        nodes = list(_walk(function.body))
        assigned = {
            t.target.value
            for n in nodes
            if isinstance(n, cst.Assign) and _contains(n.value, call)
            for t in n.targets
            if isinstance(t.target, cst.Name)
        }

        def from_gradient(expr: cst.CSTNode) -> bool:
            return _contains(expr, call) or any(isinstance(n, cst.Name) and n.value in assigned for n in _walk(expr))

        return any(
            isinstance(r, cst.Return)
            and r.value is not None
            and any(self._is_reduction(n) and from_gradient(n) for n in _walk(r.value))
            for r in nodes
        )

    def _is_reduction(self, node: cst.CSTNode) -> bool:
        if not isinstance(node, cst.Call):
            return False
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in _REDUCTIONS and not node.args:
            return True  # x.sum(), x.mean()
        return self.model.qualified_name(node.func) in NUMPY_REDUCTIONS

    def _find(self, callables: Callables) -> Iterator[Differentiation]:
        model = self.model
        for info in model.functions.values():
            node = info.node
            if not isinstance(node, cst.FunctionDef):
                continue
            for i, decorator in enumerate(node.decorators):
                api = resolve_diff(model, decorator.decorator)
                if api is None:
                    continue
                # The remat decorators below this one wrap the function before it is differentiated.
                below = [s for d in node.decorators[i + 1 :] if (s := callables.site_of(d)) is not None]
                yield Differentiation(_with_aux(api, decorator.decorator), decorator, node, Denoted(below, node))
        for call in model.calls:
            if isinstance(model.parent(call), cst.Decorator):
                continue
            direct = DIFF_APIS.get(model.qualified_name(call.func) or "")
            if direct is not None:
                target = body_argument(call, 0, direct.target_param)
                api = direct
            else:
                api = resolve_diff(model, call.func)
                target = body_argument(call, 0, "") if api is not None else None
            if api is not None and target is not None:
                yield Differentiation(_with_aux(api, call), call, target, callables.denote(target))


def _with_aux(api: DiffApi, transform: cst.CSTNode) -> DiffApi:
    """A ``grad`` with ``has_aux=`` (not a literal False) returns outputs of the primal as well:
    it needs the forward pass as ``value_and_grad`` does (measured: the same +33-35 % FLOPs for
    a whole-function checkpoint)."""
    if api.kind != "grad":
        return api
    while isinstance(transform, cst.Call):  # the call's own keywords, then partial(...)/factory calls
        for arg in transform.args:
            is_false = isinstance(arg.value, cst.Name) and arg.value.value == "False"
            if arg.keyword is not None and arg.keyword.value == "has_aux" and not is_false:
                return DiffApi(api.qname, "value_and_grad", api.target_param)
        transform = transform.func
    return api


def resolve_diff(model: SemanticModel, expr: cst.CSTNode, depth: int = 0) -> DiffApi | None:
    """The differentiation transform ``expr`` denotes unapplied: the API itself, a
    ``functools.partial`` of it, its keyword-only factory form (``nnx.grad(argnums=1)``), or a
    name bound once to one of these."""
    if depth > _MAX_DEPTH:
        return None
    api = DIFF_APIS.get(model.qualified_name(expr) or "")
    if api is not None:
        return api
    if isinstance(expr, cst.Name):
        value = model.assigned_value(expr)
        return resolve_diff(model, value, depth + 1) if isinstance(value, cst.Call) else None
    if not isinstance(expr, cst.Call) or any(a.star for a in expr.args):
        return None
    positional = [a for a in expr.args if a.keyword is None]
    if model.qualified_name(expr.func) in PARTIAL:
        if len(positional) != 1:
            return None  # partial(jax.grad, loss) already holds the function
        return resolve_diff(model, positional[0].value, depth + 1)
    inner = DIFF_APIS.get(model.qualified_name(expr.func) or "")
    if inner is not None and not positional and all(a.keyword.value != inner.target_param for a in expr.args):  # type: ignore[union-attr]  # no positional argument: every argument has a keyword
        return inner
    return None


def default_policy(model: SemanticModel, site: RematSite) -> bool:
    """The checkpoint saves nothing but its inputs: no policy, ``policy=None`` or
    ``nothing_saveable`` (a policy that saves more, applied to a whole function, does save memory:
    measured -10 % temp with ``dots_saveable``). ``nothing_saveable()`` called returns ``False``,
    which JAX reads as no policy (measured: the same jaxpr and compiled grad)."""
    if site.has_star_args:
        return False
    arg = site.keyword("policy")
    if arg is None or (isinstance(arg.value, cst.Name) and arg.value.value == "None"):
        return True
    policy = arg.value
    if isinstance(policy, cst.Call) and not policy.args:
        policy = policy.func
    info = policy_info(model.qualified_name(policy))
    return info is not None and info.name == "nothing_saveable"


def pullback_deferred(model: SemanticModel, d: Differentiation) -> bool:
    """``d`` is a ``vjp`` whose pullback is not certainly called at once (by the statement after
    ``out, pullback = jax.vjp(...)``): kept for later, as pipeline schedules do, while only what
    it closes over stays alive."""
    if d.api.qname not in VJPS:
        return False
    statement = model.parent(d.node)
    line = model.parent(statement) if isinstance(statement, cst.Assign) else None
    block = model.parent(line) if isinstance(line, cst.SimpleStatementLine) else None
    target = statement.targets[0].target if isinstance(statement, cst.Assign) and len(statement.targets) == 1 else None
    if not isinstance(target, cst.Tuple) or len(target.elements) < 2 or not hasattr(block, "body"):
        return True
    pullback = target.elements[1].value
    siblings = list(block.body)  # type: ignore[union-attr]  # ``hasattr(block, "body")`` checked above
    following = siblings[siblings.index(line) + 1 :][:1]
    return not (
        isinstance(pullback, cst.Name)
        and following
        and any(
            isinstance(c.func, cst.Name) and c.func.value == pullback.value
            for c in model.calls
            if any(a is following[0] for a in model.ancestors(c))
        )
    )


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and everything below it, nested functions and classes included."""
    yield node
    for child in node.children:
        yield from _walk(child)


def _contains(tree: cst.CSTNode, node: cst.CSTNode) -> bool:
    return any(n is node for n in _walk(tree))
