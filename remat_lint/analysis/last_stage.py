"""The last stage of a differentiated function: a call of a checkpointed callable whose result
reaches the return with only cheap work after it.

Conservative by construction: the call must be in a top-level statement of the function (not in
a loop, a branch, a comprehension or a nested function), every later statement must be a plain
assignment or the final ``return``, the returned value must depend on the call's result, and every
operation evaluated after the call must be known to be cheap: arithmetic other than ``@``,
comparisons, indexing, tuples and dicts, ``jax.numpy`` functions other than contractions
(``dot``, ``matmul``, ``einsum``, ``linalg``...), ``jax.nn`` activations, ``stop_gradient``,
collectives that average the loss, optax losses, and array methods such as ``.mean()``. Anything
else (an unknown function, a model call, another checkpoint) makes the tail expensive, and then
the checkpoint may well save memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import libcst as cst

from remat_lint.analysis.callables import Callables, Denoted, Function
from remat_lint.analysis.semantic import SemanticModel, child_nodes
from remat_lint.analysis.sites import RematSite
from remat_lint.apis import VMAP_APIS, jax, linen, optax

_EXPENSIVE_JNP = frozenset(
    {"dot", "matmul", "einsum", "tensordot", "inner", "outer", "vdot", "vecdot", "kron", "convolve", "correlate"}
)
_CHEAP_EXACT = (
    frozenset(
        {
            "builtins.float",
            "builtins.int",
            "builtins.len",
            "builtins.dict",
            "builtins.tuple",
            "builtins.abs",
            "builtins.sum",
        }
    )
    | jax.CHEAP_CALLS
    | optax.CHEAP_LOSSES
)
_CHEAP_PREFIXES = (jax.NUMPY_PREFIX, jax.NN_PREFIX, optax.LOSSES_PREFIX)
ARRAY_METHODS = frozenset(
    {
        "mean",
        "sum",
        "max",
        "min",
        "std",
        "var",
        "astype",
        "reshape",
        "squeeze",
        "transpose",
        "ravel",
        "flatten",
        "clip",
        "square",
        "item",
        "get",
    }
)
# Expressions and statements that cost nothing beyond their operands (calls and binary operations
# are checked on their own; nodes that are neither expressions nor statements are punctuation).
_CHEAP_NODES = (
    cst.Name,
    cst.Attribute,
    cst.Subscript,
    cst.UnaryOperation,
    cst.Comparison,
    cst.BooleanOperation,
    cst.Tuple,
    cst.List,
    cst.Dict,
    cst.Integer,
    cst.Float,
    cst.SimpleString,
    cst.ConcatenatedString,
    cst.IfExp,
    cst.Ellipsis,
    cst.GeneratorExp,
)
_SIMPLE_TAIL = (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return, cst.Pass)
CALL_DEPTH = 3  # plain functions followed from the differentiated one to its last stage


@dataclass(eq=False)
class LastStage:
    call: cst.Call  # the call of the checkpointed callable
    sites: list[RematSite]  # the checkpoints it calls
    after: list[str] = field(default_factory=list)  # the cheap operations that follow, as spelled
    through: tuple[str, ...] = ()  # the same-module functions called on the way, outermost first
    whole: bool = False  # nothing but cheap work runs beside it: the checkpoint covers all the expensive work
    applied: bool = False  # ``model.apply(...)`` of an instance of a linen ``nn.remat(Cls)``


def last_stages(
    model: SemanticModel, callables: Callables, function: Function, depth: int = CALL_DEPTH
) -> Iterator[LastStage]:
    """``depth``: how many calls of plain same-module functions to follow when the last stage is
    inside one (``return head(h).mean()`` where ``head`` returns a checkpointed call)."""
    for tail, head in _tails(function):
        first = isinstance(function, cst.Lambda) or len(tail) == len(_top_level(function.body))
        yield from _in_tail(model, callables, tail, head, depth, first)


def tail_calls(model: SemanticModel, callables: Callables, function: Function) -> Iterator[tuple[cst.Call, list[str]]]:
    """Calls of what is not a checkpoint (defined elsewhere, or a plain function of this module)
    whose result reaches the return with only cheap work after it, with that work: where the
    last stage may be, in another module or through a function of this one that ends with a call
    of another module."""
    for tail, head in _tails(function):
        for call in _calls_outside_nested_scopes(head):
            denoted = callables.denote(_unbatched(model, call.func))
            plain = denoted.function is None or (
                isinstance(denoted.function, cst.FunctionDef) and not denoted.function.decorators
            )
            after = _carried(model, call, tail) if not denoted.sites and plain else None
            if after is not None:
                yield call, after


def _tails(function: Function) -> Iterator[tuple[list[cst.CSTNode], cst.CSTNode]]:
    """Walking back over the cheap tail of ``function``: each statement that may hold the last
    stage, with the statements from it to the return."""
    if isinstance(function, cst.Lambda):
        yield [function.body], function.body
        return
    statements = _top_level(function.body)
    if not statements or not isinstance(statements[-1], cst.Return) or statements[-1].value is None:
        return
    for i in range(len(statements) - 1, -1, -1):
        if not isinstance(statements[i], _SIMPLE_TAIL):
            return
        yield statements[i:], statements[i]


def _carried(model: SemanticModel, call: cst.Call, tail: list[cst.CSTNode]) -> list[str] | None:
    """The cheap operations after ``call`` when all of ``tail`` is cheap and carries its result
    to the return; None otherwise."""
    after: list[str] = []
    if all(_cheap(model, node, call, after) for node in tail) and _reaches_return(call, tail):
        return list(dict.fromkeys(after))
    return None


def _in_tail(
    model: SemanticModel, callables: Callables, tail: list[cst.CSTNode], head: cst.CSTNode, depth: int, first: bool
) -> Iterator[LastStage]:
    """Checkpointed calls in ``head`` (the first node of ``tail``) after which all of ``tail``
    is cheap and carries the call's result to the return; and, ``depth`` calls deep, the last
    stages of a plain function of this module called there."""
    for call in _calls_outside_nested_scopes(head):
        denoted = callables.denote(_unbatched(model, call.func))
        applied = _applied_linen_remat(model, callables, call)
        if applied is not None:
            denoted = Denoted([applied])
        callee = (
            denoted.function
            if isinstance(denoted.function, cst.FunctionDef) and not denoted.function.decorators
            else None
        )
        if not denoted.sites and (callee is None or depth <= 0):
            continue
        after = _carried(model, call, tail)
        if after is None:
            continue
        # In the first statement with plain arguments, only cheap work runs before or after it.
        alone = first and not any(isinstance(n, cst.Call) for a in call.args for n in _walk(a))
        if denoted.sites:
            yield LastStage(call, denoted.sites, after, whole=alone, applied=applied is not None)
            continue
        for inner in last_stages(model, callables, callee, depth - 1):  # type: ignore[arg-type]  # callee is set: a call without sites or callee was skipped above
            through = (callee.name.value, *inner.through)  # type: ignore[union-attr]  # callee is set: a call without sites or callee was skipped above
            after_all = list(dict.fromkeys([*inner.after, *after]))
            yield LastStage(inner.call, inner.sites, after_all, through, whole=alone and inner.whole)


def _applied_linen_remat(model: SemanticModel, callables: Callables, call: cst.Call) -> RematSite | None:
    """The ``nn.remat(GPT)`` of ``model.apply`` where ``model = nn.remat(GPT)(...)`` (or of
    ``nn.remat(GPT)(...).apply``, or ``RematGPT(...).apply`` with ``RematGPT = nn.remat(GPT)``):
    linen's remat lifts the class, so ``apply`` runs the whole Module checkpointed."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value != linen.APPLY:
        return None
    if any(arg.keyword is not None and arg.keyword.value == linen.APPLY_METHOD for arg in call.args):
        return None  # another method than ``__call__``: remat lifted only what its ``methods`` name
    instance = model.assigned_value(func.value) if isinstance(func.value, cst.Name) else func.value
    lifted = instance.func if isinstance(instance, cst.Call) else None
    if isinstance(lifted, cst.Name):
        lifted = model.assigned_value(lifted)  # ``RematGPT = nn.remat(GPT)``, bound once
    if not isinstance(lifted, cst.Call):
        return None
    site = callables.site_of(lifted)
    return site if site is not None and site.api.family == "flax" else None


def _unbatched(model: SemanticModel, func: cst.BaseExpression) -> cst.BaseExpression:
    """``f`` for ``jax.vmap(f)`` (the batched stage is checkpointed just the same), else ``func``."""
    if (
        isinstance(func, cst.Call)
        and model.qualified_name(func.func) in VMAP_APIS
        and func.args
        and not func.args[0].keyword
    ):
        return func.args[0].value
    return func


def _top_level(body: cst.BaseSuite) -> list[cst.CSTNode]:
    if isinstance(body, cst.SimpleStatementSuite):
        return list(body.body)
    found: list[cst.CSTNode] = []
    for statement in body.body:
        found.extend(statement.body if isinstance(statement, cst.SimpleStatementLine) else [statement])
    return found


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield node
    for child in child_nodes(node):
        yield from _walk(child)


def _calls_outside_nested_scopes(node: cst.CSTNode) -> Iterator[cst.Call]:
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            continue
        if isinstance(current, cst.Call):
            yield current
        stack.extend(child_nodes(current))


def _cheap(
    model: SemanticModel, node: cst.CSTNode, skip: cst.Call | None, after: list[str], follow: bool = True
) -> bool:
    """Everything in ``node`` outside ``skip`` (the checkpointed call and its arguments) is cheap;
    the operations seen are appended to ``after``. ``follow``: a call of a plain function of this
    module whose body is cheap is cheap (one level)."""
    if node is skip:
        return True
    if isinstance(node, cst.Call):
        spelled = _cheap_call(model, node) or (_cheap_function_call(model, node) if follow else None)
        if spelled is None:
            return False
        after.append(spelled)
    elif isinstance(node, (cst.BinaryOperation, cst.AugAssign)):
        if isinstance(node.operator, (cst.MatrixMultiply, cst.MatrixMultiplyAssign)):
            return False
        after.append(model.module.code_for_node(node.operator).strip().rstrip("="))
    elif isinstance(node, (cst.BaseExpression, cst.BaseStatement, cst.BaseSmallStatement)) and not isinstance(
        node, (*_CHEAP_NODES, *_SIMPLE_TAIL)
    ):
        return False
    return all(_cheap(model, child, skip, after, follow) for child in child_nodes(node))


def _cheap_function_call(model: SemanticModel, call: cst.Call) -> str | None:
    """``l2(p)`` where ``l2`` is an undecorated def of this module made only of plain assignments
    and a return of cheap work (``return 1e-4 * jnp.sum(p ** 2)``): a penalty added to the loss."""
    definition = model.definition(call.func) if isinstance(call.func, cst.Name) else None
    if not isinstance(definition, cst.FunctionDef) or definition.decorators:
        return None
    statements = _top_level(definition.body)
    cheap = bool(statements) and all(
        isinstance(s, _SIMPLE_TAIL) and _cheap(model, s, None, [], follow=False) for s in statements
    )
    return f"{definition.name.value}()" if cheap else None


def _cheap_call(model: SemanticModel, call: cst.Call) -> str | None:
    func = call.func
    qname = model.qualified_name(func)
    if qname is not None:
        if qname in _CHEAP_EXACT or _cheap_prefix(qname):
            return model.module.code_for_node(func)
        return None
    if isinstance(func, cst.Attribute) and func.attr.value in ARRAY_METHODS:
        return f".{func.attr.value}()"
    return None


def _cheap_prefix(qname: str) -> bool:
    if qname.startswith(jax.NUMPY_PREFIX):
        rest = qname[len(jax.NUMPY_PREFIX) :]
        return rest not in _EXPENSIVE_JNP and not rest.startswith(("linalg.", "fft."))
    if qname.startswith(jax.NN_PREFIX):
        return "attention" not in qname
    return qname.startswith(_CHEAP_PREFIXES)


def _reaches_return(call: cst.Call, tail: list[cst.CSTNode]) -> bool:
    """The call's result flows through the tail's assignments into the returned value."""
    head = tail[0]
    if isinstance(head, (cst.Return, cst.BaseExpression)):
        return True  # a return statement, or a lambda's body
    if isinstance(head, cst.Expr):
        return False
    carried = _targets(head)
    for statement in tail[1:]:
        if isinstance(statement, cst.Return):
            return bool(carried & _names(statement.value))
        value = getattr(statement, "value", None)
        uses = _names(value) if value is not None else set()
        if isinstance(statement, cst.AugAssign):
            uses |= _names(statement.target)
        targets = _targets(statement)
        carried = (carried - targets) | (targets if uses & carried else set())
    return False


def _targets(statement: cst.CSTNode) -> set[str]:
    if isinstance(statement, cst.Assign):
        return set().union(*(_names(t.target) for t in statement.targets))
    if isinstance(statement, (cst.AnnAssign, cst.AugAssign)):
        return _names(statement.target)
    return set()


def _names(node: cst.CSTNode | None) -> set[str]:
    if node is None:
        return set()
    if isinstance(node, cst.Name):
        return {node.value}
    if isinstance(node, cst.Attribute):
        return _names(node.value)
    return set().union(*(_names(c) for c in child_nodes(node)))
