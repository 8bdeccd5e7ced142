from __future__ import annotations

import libcst as cst

from remat_lint.analysis.bodies import method, receiver_class
from remat_lint.analysis.callables import instance_attribute
from remat_lint.analysis.layers import AppliedLayer, flag_argument, layer_of
from remat_lint.analysis.semantic import SemanticModel, child_nodes
from remat_lint.analysis.values import Values
from remat_lint.apis.nnx import STATEFUL_LAYERS
from remat_lint.findings import Severity
from remat_lint.rule import Invalid, Rule

_MAX_DEPTH = 4  # Modules followed down from the closure's call


class NnxRematClosureState(Rule):
    """
    ## What it does
    Flags `nnx.remat` of a closure (a `lambda` or nested `def` inside a method) that calls a
    `BatchNorm` or `Dropout` layer of `self` in training mode, or a Module of this file whose
    `__call__` does.

    ## Why is this bad?
    `nnx.remat` lifts the NNX state of its *arguments* into the checkpoint. A layer read through
    the closed-over `self` is not an argument: when it updates its state under the checkpoint
    (BatchNorm's running statistics, Dropout's RNG counter), NNX refuses the write from the inner
    trace. Measured on flax 0.12.8, with and without `nnx.grad` / `nnx.value_and_grad`: the first
    call raises `TraceContextError: Cannot mutate BatchStat from a different trace level`
    (`RngCount` for Dropout; the same through a Module of `self` that holds them). A layer without state
    (`nnx.Linear`), `use_running_average=True`, `deterministic=True` and `model.eval()` run.

    Passing the module as an argument (`nnx.remat(lambda m, h: m.bn(m.lin(h)))(self, h)`) or
    decorating the method (`@nnx.remat def __call__(self, x)`) runs and is not flagged. A layer
    given its mode flag anywhere (constructor or call) is left alone: the flag may switch it off;
    so is a Dropout given `rngs=` at the call (they may be the closure's argument).

    On by default: it fires only when the layer's construction is found in the class and nothing
    can turn its state update off.

    ## Example
    ```python
    from flax import nnx

    class Block(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(4, 4, rngs=rngs)
            self.norm = nnx.BatchNorm(4, rngs=rngs)

        def __call__(self, x):
            return nnx.remat(lambda h: self.norm(self.linear(h)))(x)
    ```

    ## Use instead
    ```python
        def __call__(self, x):
            return nnx.remat(lambda block, h: block.norm(block.linear(h)))(self, x)
    ```

    ## Fix safety
    No fix: the closure's body must be rewritten to use the argument.

    ## References
    - [`flax.nnx.remat`](https://flax.readthedocs.io/en/latest/api_reference/flax.nnx/transforms.html#flax.nnx.remat)
    - [`flax.errors.TraceContextError`](https://flax.readthedocs.io/en/latest/api_reference/flax.errors.html#flax.errors.TraceContextError)
    """

    code = "REM019"
    trace_check = Rule.TraceCheck("exception", raises=(("TraceContextError", "Cannot mutate"),))
    name = "nnx-remat-closure-state"
    severity = Severity.ERROR

    VALID = [
        "from flax import nnx\nclass B(nnx.Module):\n    def __init__(self, rngs):\n"
        "        self.lin = nnx.Linear(4, 4, rngs=rngs)\n    def __call__(self, x):\n"
        "        return nnx.remat(lambda h: self.lin(h))(x)",
        "from flax import nnx\nclass B(nnx.Module):\n    def __init__(self, rngs):\n"
        "        self.bn = nnx.BatchNorm(4, rngs=rngs)\n    def __call__(self, x):\n"
        "        return nnx.remat(lambda m, h: m.bn(h))(self, x)",
        "from flax import nnx\nclass B(nnx.Module):\n    def __init__(self, rngs):\n"
        "        self.bn = nnx.BatchNorm(4, rngs=rngs)\n    @nnx.remat\n    def __call__(self, x):\n"
        "        return self.bn(x)",
        "from flax import nnx\nclass B(nnx.Module):\n    def __init__(self, rngs):\n"
        "        self.do = nnx.Dropout(0.1, deterministic=True, rngs=rngs)\n    def __call__(self, x):\n"
        "        return nnx.remat(lambda h: self.do(h))(x)",
    ]
    INVALID = [
        Invalid(
            "from flax import nnx\nclass B(nnx.Module):\n    def __init__(self, rngs):\n"
            "        self.bn = nnx.BatchNorm(4, rngs=rngs)\n    def __call__(self, x):\n"
            "        return nnx.remat(lambda h: self.bn(h))(x)"
        ),
        Invalid(
            "from flax import nnx\nclass B(nnx.Module):\n    def __init__(self, rngs):\n"
            "        self.drop = nnx.Dropout(0.1, rngs=rngs)\n    def __call__(self, x):\n"
            "        @nnx.remat\n        def inner(h):\n            return self.drop(h)\n        return inner(x)"
        ),
    ]

    def check(self) -> None:
        model = self.ctx.model
        reported: set[int] = set()
        for site in self.ctx.sites:
            target = site.target
            if site.api.family != "nnx" or target is None:
                continue
            closure = model.definition(target) if not isinstance(target, cst.FunctionDef) else target
            if not isinstance(closure, (cst.Lambda, cst.FunctionDef)) or _is_method(model, closure):
                continue
            for call, variable in _stateful_closure_calls(self.ctx.values, closure):
                if id(call) in reported:
                    continue
                reported.add(id(call))
                self.report(
                    call,
                    f"`{self.ctx.code(call.func)}` is read from the enclosing `self` inside `nnx.remat`: its state update "
                    f"raises `TraceContextError: Cannot mutate {variable} from a different trace level` on the first "
                    "call (training mode). Pass the module as an argument: "
                    "`nnx.remat(lambda m, h: ...)(self, h)`",
                )


def _is_method(model: SemanticModel, node: cst.Lambda | cst.FunctionDef) -> bool:
    info = model.functions.get(id(node))
    return info is not None and info.class_node is not None


def _stateful_closure_calls(values: Values, closure: cst.Lambda | cst.FunctionDef) -> list[tuple[cst.Call, str]]:
    """Calls in ``closure`` of a ``self.<attr>`` of the enclosing method that update state, with the
    variable types written (``BatchStat or RngCount``)."""
    found: list[tuple[cst.Call, str]] = []
    for call in _self_calls(values.model, closure.body):
        variables = _state_updates(values, call, 0)
        if variables:
            found.append((call, " or ".join(sorted(variables))))
    return found


def _self_calls(model: SemanticModel, body: cst.CSTNode) -> list[cst.Call]:
    """The calls of ``self.<attr>(...)`` in ``body``, ``self`` being a method's first parameter."""
    calls: list[cst.Call] = []
    stack: list[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        stack.extend(child_nodes(node))
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            if receiver_class(model, node.func.value) is not None:
                calls.append(node)
    return calls


def _state_updates(values: Values, call: cst.Call, depth: int) -> set[str]:
    """The variable types that ``call`` (``self.<attr>(...)``) writes: a stateful layer's that nothing
    may switch off, or those its Module writes when ``<attr>`` is an instance of a class of this file
    (its undecorated ``__call__``, followed down the same way)."""
    model = values.model
    layer = layer_of(values, call)
    if layer is not None:
        qname = model.qualified_name(layer.construction.func) or ""
        return {STATEFUL_LAYERS[qname]} if qname in STATEFUL_LAYERS and not _may_be_off(call, layer) else set()
    cls = receiver_class(model, call.func.value)  # type: ignore[attr-defined]  # ``call`` is ``self.<attr>(...)`` (this function's contract)
    built = instance_attribute(model, cls, call.func.attr.value) if cls is not None else None  # type: ignore[attr-defined]  # ``call`` is ``self.<attr>(...)`` (this function's contract)
    module = model.definition(built.func) if isinstance(built, cst.Call) else None
    forward = method(model, module, "__call__") if isinstance(module, cst.ClassDef) and depth < _MAX_DEPTH else None
    if forward is None or forward.decorators:  # a checkpointed __call__ raises too, but names other state
        return set()
    return {v for inner in _self_calls(model, forward.body) for v in _state_updates(values, inner, depth + 1)}


def _may_be_off(call: cst.Call, layer: AppliedLayer) -> bool:
    """The layer is given its mode flag (which may switch the update off), or ``rngs`` at the call
    (which may be the closure's own argument)."""
    at_call = {arg.keyword.value for arg in call.args if arg.keyword is not None}
    built = {arg.keyword.value for arg in layer.construction.args if arg.keyword is not None}
    return layer.spec.flag in built | at_call or "rngs" in at_call or flag_argument(call, layer) is not None
