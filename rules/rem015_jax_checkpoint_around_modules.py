from __future__ import annotations

from typing import Literal, Sequence

import libcst as cst

from remat_lint.analysis.bodies import CheckpointedFunction
from remat_lint.analysis.linen import is_linen_classdef
from remat_lint.analysis.semantic import SemanticModel, child_nodes
from remat_lint.analysis.sites import RematSite
from remat_lint.analysis.tracing import self_attribute
from remat_lint.analysis.values import Value, Values
from remat_lint.apis import haiku, linen
from remat_lint.findings import Severity
from remat_lint.rule import Invalid, Rule

Framework = Literal["Flax", "Haiku"]

_FIX = {"Flax": "`nn.remat` (a lifted transform) on a Module class", "Haiku": "`hk.remat`"}
_FRAMEWORKS: dict[str, Framework] = {"flax": "Flax", "haiku": "Haiku"}


class JaxCheckpointAroundModules(Rule):
    """
    ## What it does
    Flags `jax.checkpoint` / `jax.remat` whose body makes the first call of a Flax linen or
    Haiku layer that has parameters: a layer built in the body (`lambda h: nn.Dense(4)(h)`,
    `lambda h: hk.Linear(4)(h)`), or one bound to a local name or assigned once in `setup`
    that only the body calls (`dense = nn.Dense(4)` then `jax.checkpoint(lambda h: dense(h))`;
    `self.dense`), inside a linen Module method or a function; and a Haiku layer given to
    `jax.checkpoint` itself (`jax.checkpoint(hk.Linear(4))`).

    ## Why is this bad?
    JAX's transforms do not know about Flax or Haiku variables. A layer's first call creates its
    parameters, here while `jax.checkpoint` traces the body: `init` returns tracers as the
    parameters (a jitted `init` raises at once), and `apply`, or any other use of them such as
    `optax.apply_updates`, raises `UnexpectedTracerError` (measured, jax 0.10.2 / flax 0.12.8 /
    dm-haiku 0.0.17: Haiku's `apply` raises it too). The lifted transforms `nn.remat` and `hk.remat` handle the variables.

    Not flagged: `Module.apply` with explicit variables inside `jax.checkpoint` (pure), a layer
    already called outside the checkpoint (its parameters exist), `nn.remat`, `hk.remat`.
    REM009 covers a Module class or instance passed to `jax.checkpoint` directly.

    ## Example
    ```python
    import flax.linen as nn
    import jax

    class Block(nn.Module):
        @nn.compact
        def __call__(self, x):
            return jax.checkpoint(lambda h: nn.relu(nn.Dense(4)(h)))(x)
    ```

    ## Use instead
    ```python
    class Block(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.remat(Mlp)()(x)  # Mlp: a Module computing nn.relu(nn.Dense(4)(h))
    ```

    ## Fix safety
    No fix: the checkpointed code has to become a Module (Flax) or move under `hk.remat`.

    ## References
    - [`flax.linen.remat`](https://flax.readthedocs.io/en/latest/api_reference/flax.linen/transformations.html#flax.linen.remat)
    - [`haiku.remat`](https://dm-haiku.readthedocs.io/en/latest/api.html#haiku.remat)
    - [JAX and Haiku: mixing transforms](https://dm-haiku.readthedocs.io/en/latest/notebooks/transforms.html)
    """

    code = "REM015"
    trace_check = Rule.TraceCheck("exception", raises=(("UnexpectedTracerError", ""),))
    name = "jax-checkpoint-around-modules"
    severity = Severity.ERROR

    VALID = [
        "import flax.linen as nn, jax\nclass B(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n        return nn.remat(Mlp)()(x)",
        "import flax.linen as nn, jax\nd = nn.Dense(4)\ndef f(v, x):\n    return jax.checkpoint(lambda v, h: d.apply(v, h))(v, x)",
        "import haiku as hk\ndef f(x):\n    return hk.remat(lambda h: hk.Linear(4)(h))(x)",
        (
            "import flax.linen as nn, jax\nclass B(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n"
            "        dense = nn.Dense(4)\n        y = dense(x)\n        return jax.checkpoint(lambda h: dense(h))(y)"
        ),
        "import flax.linen as nn, jax\nclass B(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n"
        "        return jax.checkpoint(lambda h: nn.relu(h))(x)",
    ]
    INVALID = [
        Invalid(
            "import flax.linen as nn, jax\nclass B(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n"
            "        return jax.checkpoint(lambda h: nn.Dense(4)(h))(x)"
        ),
        Invalid(
            "import flax.linen as nn, jax\nclass B(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n"
            "        dense = nn.Dense(4)\n        return jax.checkpoint(lambda h: nn.relu(dense(h)))(x)"
        ),
        Invalid("import haiku as hk, jax\ndef forward(x):\n    return jax.checkpoint(lambda h: hk.Linear(4)(h))(x)"),
    ]

    def check(self) -> None:
        for fn in self.ctx.bodies.functions:
            if fn.site.api.family != "jax" or not fn.entry or self._is_linen_method(fn):
                continue  # a checkpointed linen Module method is REM009's
            found = self._first_layer_call(fn)
            if found is not None:
                self._report(fn.site, *found)
        for site in self.ctx.sites:
            # ``jax.checkpoint(hk.Linear(4))`` or a name bound to a Haiku layer only checkpointed
            # (a Flax instance is REM009's).
            if site.api.family == "jax" and site.form == "call" and isinstance(site.target, cst.BaseExpression):
                constructor = self._constructor(site.target, site.node)
                if constructor is not None and _framework(self.ctx.values, constructor.func) == "Haiku":
                    self._report(site, "Haiku", self.ctx.code(constructor.func))

    def _report(self, site: RematSite, framework: Framework, layer: str) -> None:
        self.report(
            site.node,
            f"`{site.api.display}` makes the first call of the {framework} layer `{layer}`, so the parameters are "
            f"tracers and `apply` raises `UnexpectedTracerError`. JAX's transforms do not lift {framework} variables: "
            f"`init` creates the parameters while the checkpoint traces and returns tracers (a jitted `init` raises at "
            f"once), and `apply` or any other use of them (`optax.apply_updates`) raises; use {_FIX[framework]}",
        )

    def _is_linen_method(self, fn: CheckpointedFunction) -> bool:
        info = self.ctx.model.functions.get(id(fn.node))
        return info is not None and info.class_node is not None and is_linen_classdef(self.ctx.model, info.class_node)

    def _first_layer_call(self, fn: CheckpointedFunction) -> tuple[Framework, str] | None:
        model = self.ctx.model
        site = fn.site.node  # for a decorator, the function around the decorated def
        around = model.parent(site) if isinstance(site, cst.Decorator) else site
        outer = model.enclosing_function(around) if around is not None else None
        if outer is None:
            return None
        in_linen_method = outer.class_node is not None and is_linen_classdef(model, outer.class_node)
        for node in self.ctx.bodies.nodes(fn.node):
            if not isinstance(node, cst.Call):
                continue
            constructor = self._constructor(node.func, fn.node)
            if constructor is None:
                continue
            framework = _framework(self.ctx.values, constructor.func)
            if framework == "Haiku" or (framework == "Flax" and in_linen_method):
                return framework, self.ctx.code(constructor.func)
        return None

    def _constructor(self, callee: cst.BaseExpression, within: cst.CSTNode) -> cst.Call | None:
        """The layer constructor whose instance ``callee`` is, when that instance is built there or
        bound to a name (or ``self.x`` in ``setup``) used only ``within`` (the body, or the remat call)."""
        model = self.ctx.model
        if isinstance(callee, cst.Call):
            return callee
        uses: Sequence[cst.CSTNode]  # the instance's uses: ``self.x`` attributes or names
        if isinstance(callee, cst.Attribute):  # ``self.dense``, assigned once in ``setup``
            assignment, uses = self_attribute(model, callee)
            value = assignment.value if assignment is not None else None
        elif (
            isinstance(callee, cst.Name)
            and (binding := model.single_binding(callee)) is not None
            and binding.kind == "assign"
        ):
            value = binding.value
            uses = _references(model, value, callee.value) if isinstance(value, cst.Call) else []
        else:
            return None
        if not isinstance(value, cst.Call) or not uses:
            return None
        inside = all(any(a is within for a in model.ancestors(use)) for use in uses)
        return value if inside else None


def _framework(values: Values, cls: cst.BaseExpression) -> Framework | None:
    """Flax or Haiku when every class ``cls`` can be (as the value layer tells: an alias, a
    ``functools.partial`` of a layer...) is a layer class of that framework that creates parameters."""
    found = {_layer_framework(values.model, v) for v in values.possible(cls) or (None,)}
    return found.pop() if len(found) == 1 else None


def _layer_framework(model: SemanticModel, cls: Value | None) -> Framework | None:
    if cls is None or cls.kind != "module_class":
        return None
    if cls.qname in linen.PARAM_LAYERS:
        return "Flax"
    if cls.qname in haiku.PARAM_LAYERS:
        return "Haiku"
    if cls.definition is None or not _creates_parameters(model, cls.definition):
        return None
    return _FRAMEWORKS.get(cls.framework or "")


def _creates_parameters(model: SemanticModel, cls: cst.ClassDef) -> bool:
    """A class of this module whose methods build a parameterised layer or call ``self.param`` /
    ``hk.get_parameter``."""
    stack: list[cst.CSTNode] = [cls.body]
    while stack:
        node = stack.pop()
        stack.extend(child_nodes(node))
        if not isinstance(node, cst.Call):
            continue
        qname = model.qualified_name(node.func)
        if qname in linen.PARAM_LAYERS | haiku.PARAM_LAYERS | haiku.PARAM_CALLS:
            return True
        func = node.func
        if (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
            and func.attr.value == "param"
        ):
            return True
    return False


def _references(model: SemanticModel, value: cst.Call, name: str) -> list[cst.Name]:
    """Every use of ``name`` in the scope that binds it to ``value`` (the binding itself excluded)."""
    scope = model.scope_of(value)
    uses = []
    stack: list[cst.CSTNode] = [scope.node]
    while stack:
        node = stack.pop()
        stack.extend(child_nodes(node))
        if isinstance(node, cst.Name) and node.value == name:
            binding = model.single_binding(node)
            if binding is not None and binding.value is value and not isinstance(model.parent(node), cst.AssignTarget):
                uses.append(node)
    return uses
