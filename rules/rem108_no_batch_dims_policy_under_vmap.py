from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

import libcst as cst

from remat_lint.analysis.bodies import CheckpointedFunction, is_call_method
from remat_lint.analysis.policies import site_policy
from remat_lint.analysis.semantic import child_nodes
from remat_lint.analysis.sites import RematSite
from remat_lint.analysis.value import Value, call_argument
from remat_lint.apis import ARRAY_VMAPS, policy_info
from remat_lint.apis.jax import EINSUMS, ELEMENTWISE, MATMULS, NO_BATCH_DIMS_POLICIES
from remat_lint.apis.linen import DENSE_LAYERS, MODULE_VMAPS, PARAM_METHOD, PARAMS
from remat_lint.findings import Severity
from remat_lint.rule import Invalid, Rule

_MAX_DEPTH = 16  # local assignments followed back from a dot operand
_Spec = TypeVar("_Spec")  # a map's row in its table (``apis.ARRAY_VMAPS``, ``apis.linen.MODULE_VMAPS``)


class NoBatchDimsPolicyUnderVmap(Rule):
    """
    ## What it does
    Flags a `dots_with_no_batch_dims_saveable` policy (or `checkpoint_dots_with_no_batch_dims`,
    `offload_dot_with_no_batch_dims(...)`) on a checkpoint that `jax.vmap` or `nnx.vmap` maps
    over every argument (`in_axes` left out, an integer, or a tuple of integers), when every
    operand of every matrix product in the checkpointed function comes from its arguments. Also
    on a linen Module checkpointed with it that Flax's `nn.vmap` maps over every argument and
    over its parameters (`nn.vmap(nn.remat(Block, policy=...), variable_axes={"params": 0})`, an
    ensemble), when every product in its `__call__` is an `nn.Dense(...)` layer or a product of
    its inputs and its `self.param(...)` parameters. A checkpoint bound to a name in a function
    (`step = jax.checkpoint(...)`) counts when every read of the name is such a `vmap`.

    ## Why is this bad?
    `vmap` adds the mapped axis to every value computed from a mapped argument. A matrix product
    of two such values becomes a batched `dot_general`: it has a batch dimension, so the policy
    saves none of them and the checkpoint keeps the same residuals as `nothing_saveable`.
    Measured on jax 0.10.2 (CPU; tanh MLPs of depth 2 and 4, widths 16 and 64, `grad` and
    `value_and_grad`; `in_axes` left out, all 0, the weights on axis 1, and `vmap` inside the
    checkpoint): the three policies keep 3 and 5 residuals, as `nothing_saveable` does, where
    `dots_saveable` keeps 5 and 9, the residuals `dots_with_no_batch_dims_saveable` keeps without
    `vmap`. The same with `nnx.vmap`, and with `nnx.remat` inside either. With Flax linen
    (flax 0.12.8; `nn.Dense` or `self.param` layers, depth 2 and 4, widths 16 and 64, the
    parameters on axis 0 or 1): 5 and 9 residuals, as `nothing_saveable`, where `dots_saveable`
    keeps 7 and 13.

    Not flagged: weights shared across the mapped axis (`in_axes=(0, None)`), a product with an
    array the function reads from outside (a closure or module variable) or builds itself
    (`jnp.eye(n)`), an argument with a default, any body the rule cannot follow (a loop, a
    helper call, a method), and a checkpoint bound to a module-level name (another module may
    call it unmapped, where the policy saves). For an unmapped operand `vmap` folds the mapped
    axis into a free dimension, the product has no batch dimension, and the policy saves it
    (measured: more residuals than `nothing_saveable`; with every weight shared, as many as
    `dots_saveable`). Under linen's `nn.vmap` the same holds for shared parameters
    (`variable_axes={"params": None}`: as many as `dots_saveable`) and an unmapped input
    (`in_axes=None`: its product saved); also not flagged there: layers built in `setup` or
    other than `nn.Dense`, and a remat inside the mapped Module or a vmap inside the remat
    (measured the same as the flagged form, but the rule does not follow them).

    ## Example
    ```python
    import jax
    cp = jax.checkpoint_policies

    def block(x, w1, w2):
        return jax.numpy.tanh(jax.numpy.tanh(x @ w1) @ w2)

    per_example = jax.vmap(jax.checkpoint(block, policy=cp.dots_with_no_batch_dims_saveable))
    ```

    ## Use instead
    ```python
    per_example = jax.vmap(jax.checkpoint(block, policy=cp.dots_saveable))
    ```
    `dots_saveable` saves every product, including any that had a batch dimension before `vmap`
    (an attention score); to keep only some, name them with `checkpoint_name` and use
    `save_only_these_names` (measured under `vmap`: it saves the named products, as many
    residuals as `dots_saveable` when every product is named). For
    `offload_dot_with_no_batch_dims`, name the products and use
    `save_and_offload_only_these_names`.

    ## Fix safety
    No fix: whether to save the products (more memory) or recompute them is the author's call.

    ## References
    - [Gradient checkpointing: policies](https://docs.jax.dev/en/latest/gradient-checkpointing.html)
    - [`jax.vmap`](https://docs.jax.dev/en/latest/_autosummary/jax.vmap.html)
    """

    code = "REM108"
    name = "no-batch-dims-policy-under-vmap"
    severity = Severity.WARNING

    VALID = [
        "import jax\ncp = jax.checkpoint_policies\ndef f(x, w):\n    return x @ w\n"
        "g = jax.vmap(jax.checkpoint(f, policy=cp.dots_with_no_batch_dims_saveable), in_axes=(0, None))",
        "import jax, jax.numpy as jnp\ncp = jax.checkpoint_policies\nW = jnp.ones((4, 4))\ndef f(x):\n    return x @ W\n"
        "g = jax.vmap(jax.checkpoint(f, policy=cp.dots_with_no_batch_dims_saveable))",
        "import jax\ncp = jax.checkpoint_policies\ndef f(x, w):\n    return x @ w\n"
        "g = jax.vmap(jax.checkpoint(f, policy=cp.dots_saveable))",
    ]
    INVALID = [
        Invalid(
            "import jax\ncp = jax.checkpoint_policies\ndef f(x, w):\n    return jax.numpy.tanh(x @ w)\n"
            "g = jax.vmap(jax.checkpoint(f, policy=cp.dots_with_no_batch_dims_saveable))"
        ),
        Invalid(
            "import jax\ncp = jax.checkpoint_policies\n"
            "g = jax.vmap(jax.checkpoint(lambda x, w: x @ w, policy=cp.checkpoint_dots_with_no_batch_dims), in_axes=(0, 1))"
        ),
    ]

    def check(self) -> None:
        bodies = {id(fn.site): fn for fn in self.ctx.bodies.functions if fn.entry}
        for site in self.ctx.sites:
            policy = site_policy(site)
            fn = bodies.get(id(site))
            offloads = self._no_batch_dims(policy) if policy is not None else None
            if policy is None or fn is None or offloads is None or site.has_star_args or _static_arguments(site):
                continue
            module = fn.receiver is not None  # a linen Module's method: its parameters must be mapped too
            mapped = self._maps_module(site, fn) if module else self._mapped_over_every_argument(site)
            if mapped and _Batching(self, fn).every_dot_batched():
                verb, instead = (
                    ("offloads", "name the products with `checkpoint_name` and use `save_and_offload_only_these_names`")
                    if offloads
                    else (
                        "saves",
                        "use `dots_saveable`, or name the products with `checkpoint_name` and use `save_only_these_names`",
                    )
                )
                self.report(
                    policy,
                    f"`{self.ctx.code(policy)}` {verb} nothing here: `vmap` maps every argument"
                    f"{' and the parameters' if module else ''}, so every matrix "
                    "product in the checkpoint has a batch dimension (measured: the same residuals as `nothing_saveable`). "
                    f"To keep them, {instead}",
                )

    def _no_batch_dims(self, policy: cst.BaseExpression) -> bool | None:
        """Whether the policy offloads, when it is certainly one of the no-batch-dims policies."""
        infos = [
            policy_info(value.qname) if value.kind == "policy" else None
            for value in self.ctx.values.possible(policy) or ()
        ]
        if not infos or not all(info is not None and info.name in NO_BATCH_DIMS_POLICIES for info in infos):
            return None
        offloads = {info.offloads for info in infos if info is not None}
        return offloads.pop() if len(offloads) == 1 else None

    def _mapped_over_every_argument(self, site: RematSite) -> bool:
        """``jax.vmap(<site>)``, ``nnx.vmap(<site>)`` or either as the decorator right above the
        checkpoint's, with ``in_axes`` left out, an integer or a tuple of integers (no ``None``:
        nothing shared). Also ``f = <site>`` in a function, every read of ``f`` such a map."""
        if site.form == "decorator":
            decorated = site.target
            if not isinstance(decorated, cst.FunctionDef) or not isinstance(site.node, cst.Decorator):
                return False
            position = next((i for i, d in enumerate(decorated.decorators) if d is site.node), 0)
            above = decorated.decorators[position - 1].decorator if position else None
            return above is not None and self.ctx.qualified_name(above) in ARRAY_VMAPS
        uses = self._local_uses(site.node)
        return bool(uses) and all(self._maps_every_argument_of(use) for use in uses)

    def _local_uses(self, checkpoint: cst.CSTNode) -> list[cst.CSTNode]:
        """Where the checkpoint's callable is used: itself, or every read of the local name it is
        bound to in a function (``f = jax.checkpoint(g, ...)``) that this binding reaches; no
        other module can reach a local name, so no call elsewhere may leave it unmapped."""
        model = self.ctx.model
        assign = model.parent(checkpoint)
        if not (
            isinstance(assign, cst.Assign)
            and len(assign.targets) == 1
            and isinstance(target := assign.targets[0].target, cst.Name)
        ):
            return [checkpoint]
        scope = model.scope_of(checkpoint)
        name = target.value
        if scope.kind != "function" or name in scope.global_names:
            return []
        return [
            use
            for use in model.names
            if use.value == name
            and not isinstance(model.parent(use), cst.AssignTarget)  # a binding, not a read
            and any(binding.node is assign for binding in model.bindings_at(use) or ())
        ]

    def _maps_every_argument_of(self, callable_: cst.CSTNode) -> bool:
        found = self._map_of(callable_, ARRAY_VMAPS)
        if found is None:
            return False
        vmap, in_axes = found
        given = call_argument(vmap, *in_axes)
        return given is None or _every_axis_mapped(given)

    def _map_of(self, callable_: cst.CSTNode, maps: Mapping[str, _Spec]) -> tuple[cst.Call, _Spec] | None:
        """The call of one of ``maps`` whose function (its first argument) is ``callable_``, and
        that map's row; None when there is none, or another argument is spread (``*axes``)."""
        vmap = self.ctx.model.parent(self.ctx.model.parent(callable_))
        if not (
            isinstance(vmap, cst.Call)
            and vmap.args
            and vmap.args[0].value is callable_
            and vmap.args[0].keyword is None
            and not any(arg.star for arg in vmap.args)
        ):
            return None
        spec = maps.get(self.ctx.qualified_name(vmap.func) or "")
        return None if spec is None else (vmap, spec)

    def _maps_module(self, site: RematSite, fn: CheckpointedFunction) -> bool:
        """``nn.vmap(nn.remat(Block, policy=P), variable_axes={"params": 0}, ...)``: the lifted
        vmap of a linen Module's ``__call__`` over every argument (``in_axes`` as for ``jax.vmap``)
        and over its parameters (an integer axis)."""
        found = self._map_of(site.node, MODULE_VMAPS) if is_call_method(fn.node) else None
        if found is None:
            return False
        vmap, spec = found
        if any(_keyword(arg) == spec.methods for arg in vmap.args):
            return False  # other methods than ``__call__``
        in_axes = call_argument(vmap, *spec.in_axes)
        variable_axes = call_argument(vmap, *spec.variable_axes)
        return (in_axes is None or _every_axis_mapped(in_axes)) and (
            variable_axes is not None and self._params_mapped(variable_axes)
        )

    def _params_mapped(self, variable_axes: cst.BaseExpression) -> bool:
        """A table of collections to axes whose every key is known and whose parameters' axis is
        a non-negative integer."""
        entries = self.ctx.values.entries(variable_axes)
        if entries is None or not all(key is not None and key.kind == "str" for key, _ in entries):
            return False
        axes = [self.ctx.values.single(axis) for key, axis in entries if key is not None and key.literal == PARAMS]
        return len(axes) == 1 and _non_negative_int(axes[0])


class _Batching:
    """Which values of a checkpointed function ``vmap`` batches, when it maps every argument:
    the arguments, and what elementwise maths, indexing, ``.T`` and products compute from one of
    them. In a linen Module's method (``nn.vmap`` maps its parameters too, the caller checked it):
    its parameters (``self.param(...)``) and the output of a dense layer (``nn.Dense(4)(x)``, a
    product with its kernel)."""

    def __init__(self, rule: NoBatchDimsPolicyUnderVmap, fn: CheckpointedFunction) -> None:
        self.ctx = rule.ctx
        self.fn = fn
        self.params = {id(param) for param in fn.args}

    def every_dot_batched(self) -> bool:
        """The function takes only positional arguments without defaults, is a plain sequence of
        assignments and expressions ending in a ``return`` (or a lambda), calls only elementwise functions and
        products, and computes at least one product; each product's operands are all batched."""
        fn = self.fn
        if fn.star_args or fn.bound or fn.keyword_only or not self._straight_line():
            return False
        if any(param.default is not None for param in fn.args):
            return False  # an argument the call may leave out: its default is not mapped
        dots = 0
        unrun: set[int] = set()  # a parameter's initializer and a layer's settings: not products of values
        for node in self.ctx.bodies.nodes(self.fn.node):
            if id(node) in unrun:
                unrun.update(id(child) for child in child_nodes(node))
                continue
            if self._parameter(node) or self._construction(node):
                unrun.update(id(arg) for arg in node.args)  # type: ignore[attr-defined]  # both are calls
                continue
            if isinstance(node, (cst.FunctionDef, cst.Lambda)) and node is not self.fn.node:
                return False
            operands = self._operands(node)
            if operands is None:
                return False
            if operands:
                dots += 1
                if not all(self._batched(operand, 0) for operand in operands):
                    return False
        return dots > 0

    def _straight_line(self) -> bool:
        node = self.fn.node
        if isinstance(node, cst.Lambda):
            return True
        statements = node.body.body
        return all(
            isinstance(line, cst.SimpleStatementLine)
            and all(isinstance(small, (cst.Assign, cst.Return, cst.Expr)) for small in line.body)
            for line in statements
        )

    def _operands(self, node: cst.CSTNode) -> tuple[cst.BaseExpression, ...] | None:
        """A product's operands, ``()`` for any other node, None for a call the rule cannot follow
        (a dense layer's kernel is a parameter: only its input is listed)."""
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.MatrixMultiply):
            return node.left, node.right
        if not isinstance(node, cst.Call):
            return ()
        dense_input = self._dense(node)
        if dense_input is not None:
            return (dense_input,)
        qname = self.ctx.qualified_name(node.func)
        if any(arg.star for arg in node.args) or qname not in MATMULS | EINSUMS | ELEMENTWISE:
            return None
        positional = tuple(arg.value for arg in node.args if arg.keyword is None)
        if qname in MATMULS:
            return positional
        return positional[1:] if qname in EINSUMS else ()

    def _batched(self, expr: cst.BaseExpression, depth: int) -> bool:
        if self._parameter(expr) or self._dense(expr) is not None:
            return True  # a mapped parameter, or a product with one
        if depth > _MAX_DEPTH:
            return False
        if isinstance(expr, cst.Name):
            bindings = self.ctx.model.bindings_at(expr)
            return bool(bindings) and all(
                id(b.node) in self.params
                or (b.kind == "assign" and b.value is not None and self._batched(b.value, depth + 1))
                for b in bindings or ()
            )
        if isinstance(expr, cst.BinaryOperation):
            return self._batched(expr.left, depth + 1) or self._batched(expr.right, depth + 1)
        if isinstance(expr, cst.UnaryOperation):
            return self._batched(expr.expression, depth + 1)
        if isinstance(expr, cst.Subscript):
            return self._batched(expr.value, depth + 1)
        if isinstance(expr, cst.Attribute) and expr.attr.value == "T":  # an argument's transpose
            return self._batched(expr.value, depth + 1)
        if isinstance(expr, cst.Call) and self._operands(expr) is not None:
            return any(self._batched(arg.value, depth + 1) for arg in expr.args if arg.keyword is None)
        return False

    def _parameter(self, node: cst.CSTNode) -> bool:
        """``self.param(...)`` on the linen Module whose method this is."""
        if self.fn.receiver is None or not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
            return False
        owner = self.ctx.model.single_binding(node.func.value) if isinstance(node.func.value, cst.Name) else None
        return node.func.attr.value == PARAM_METHOD and owner is not None and owner.node is self.fn.receiver

    def _construction(self, node: cst.CSTNode) -> bool:
        """``nn.Dense(4)`` in a linen Module's method, with the product its own."""
        return (
            self.fn.receiver is not None
            and isinstance(node, cst.Call)
            and not any(arg.star for arg in node.args)
            and (replacing := DENSE_LAYERS.get(self.ctx.qualified_name(node.func) or "")) is not None
            and not any(_keyword(arg) in replacing for arg in node.args)
        )

    def _dense(self, node: cst.CSTNode) -> cst.BaseExpression | None:
        """The input of ``nn.Dense(4)(x)``: a product of ``x`` with the layer's kernel."""
        if not (isinstance(node, cst.Call) and self._construction(node.func)):
            return None
        if len(node.args) != 1 or node.args[0].keyword is not None or node.args[0].star:
            return None
        return node.args[0].value


def _static_arguments(site: RematSite) -> bool:
    """Static arguments are not traced: what vmap does to them is not the rule's case."""
    return site.keyword("static_argnums") is not None or site.keyword("static_argnames") is not None


def _keyword(arg: cst.Arg) -> str | None:
    return arg.keyword.value if arg.keyword is not None else None


def _non_negative_int(axis: Value | None) -> bool:
    return axis is not None and axis.kind == "int" and isinstance(axis.literal, int) and axis.literal >= 0


def _every_axis_mapped(in_axes: cst.BaseExpression) -> bool:
    """``0``, ``1``, ``(0, 0)``, ``[0, 1]``: every argument mapped (no ``None``, nothing unknown)."""
    if isinstance(in_axes, (cst.Tuple, cst.List)):
        return bool(in_axes.elements) and all(_every_axis_mapped(element.value) for element in in_axes.elements)
    return isinstance(in_axes, cst.Integer)
