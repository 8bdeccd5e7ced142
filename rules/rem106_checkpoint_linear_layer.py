from __future__ import annotations

import libcst as cst

from remat_lint.analysis.bodies import CheckpointedFunction
from remat_lint.analysis.layers import construction_of
from remat_lint.analysis.sites import RematSite
from remat_lint.apis import LINEAR_LAYERS
from remat_lint.apis.jax import EINSUMS, MATMULS
from remat_lint.apis.linen import LINEAR_CLASSES
from remat_lint.findings import Severity
from remat_lint.rule import Invalid, Rule


class CheckpointLinearLayer(Rule):
    """
    ## What it does
    Flags a checkpoint around a single linear layer and nothing else: `nn.remat(nn.Dense)`,
    `nn.checkpoint(nn.Dense)` (Flax's old docstring example), `jax.checkpoint(jnp.dot)`, a
    linear layer instance given to a remat that takes instances (`hk.remat(hk.Linear(4))`,
    `eqx.filter_checkpoint(eqx.nn.Linear(...))`, `nnx.remat(self.proj)` for an `nnx.Linear`, also
    `nnx.remat(lambda proj, h: proj(h))(self.proj, x)` or a nested `def` that only returns
    `proj(h)`), or a checkpointed function whose body is one `return x @ w` (`jnp.dot`,
    `jnp.matmul`, a two-operand `jnp.einsum`; plus a bias: a parameter or a number), with no
    arguments.

    ## Why is this bad?
    The backward pass of a linear layer needs only its inputs (`x` for the weight gradient, the
    weights for the input gradient), and a checkpoint saves its inputs anyway. So the
    checkpoint saves exactly the residuals the layer saves without it: measured on jax 0.10.2 /
    flax 0.12.8, the same 10 residuals for a three-layer MLP with every `nn.Dense` rematted,
    and the same 6 for a checkpointed `x @ w + b`, with the temp memory not lower; the same
    residuals with and without the checkpoint for a two-operand `einsum` plus a bias, an
    `eqx.nn.Linear`, an `hk.Linear` and an `nnx.Linear` (equinox 0.13.8, dm-haiku 0.0.17, three
    shapes each). It only
    adds a remat boundary. Checkpoint a block that holds nonlinear work (an MLP, an attention
    layer) instead.

    Not flagged: anything nonlinear, normalising or random in the body, functions defined
    elsewhere, a checkpoint given any argument (a `policy=`: offloading policies move what is
    saved; `prevent_cse=False` for a scan body), and test code.

    ## Example
    ```python
    import flax.linen as nn

    class Mlp(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.remat(nn.Dense)(256)(x))
            return nn.remat(nn.Dense)(16)(x)
    ```

    ## Use instead
    ```python
    RematMlp = nn.remat(Mlp)
    ```

    ## Fix safety
    No fix: which block to checkpoint instead is the author's call.

    ## References
    - [Gradient checkpointing with `jax.checkpoint`](https://docs.jax.dev/en/latest/gradient-checkpointing.html)
    """

    code = "REM106"
    name = "checkpoint-linear-layer"
    severity = Severity.INFO
    quiet_in_tests = True  # tests checkpoint single layers on purpose (gradient equality)

    VALID = [
        "import flax.linen as nn\nR = nn.remat(Mlp)",
        "import jax\n@jax.checkpoint\ndef f(x, w, b):\n    return jax.nn.relu(x @ w + b)",
        (
            "import jax\nfrom jax import checkpoint_policies as cp\n"
            "g = jax.checkpoint(lambda x, w: x @ w, policy=cp.offload_dot_with_no_batch_dims('device', 'pinned_host'))"
        ),
        "import flax.linen as nn\nR = nn.remat(nn.Dense, policy=p)",
        "import jax\n@jax.checkpoint\ndef f(x, w):\n    y = x @ w\n    return y * 2",
        "import jax, jax.numpy as jnp\ng = jax.checkpoint(lambda x, w, v: jnp.einsum('bi,io,oj->bj', x, w, v))",
        "import haiku as hk\ndef fwd(x):\n    return hk.remat(hk.nets.MLP([4, 4]))(x)",
        (
            "from flax import nnx\nclass N(nnx.Module):\n    def __init__(self, rngs):\n"
            "        self.proj = nnx.Linear(4, 4, rngs=rngs)\n    def __call__(self, x):\n"
            "        def run(proj, h):\n            return nnx.relu(proj(h))\n        return nnx.remat(run)(self.proj, x)"
        ),
        "import jax, jax.numpy as jnp\ng = jax.checkpoint(lambda x, w: jnp.matmul(x, w) + jnp.ones(4))",
    ]
    INVALID = [
        Invalid("import flax.linen as nn\nD = nn.checkpoint(nn.Dense)"),
        Invalid("import jax\n@jax.checkpoint\ndef linear(x, w, b):\n    return x @ w + b"),
        Invalid("import jax, jax.numpy as jnp\ng = jax.checkpoint(lambda x, w: jnp.dot(x, w))"),
        Invalid("import jax, jax.numpy as jnp\ny = jax.checkpoint(jnp.matmul)(x, w)"),
        Invalid("import jax, jax.numpy as jnp\ng = jax.checkpoint(lambda x, w: jnp.einsum('bi,io->bo', x, w))"),
        Invalid("import haiku as hk\ndef fwd(x):\n    return hk.remat(hk.Linear(4))(x)"),
        Invalid("import jax, jax.numpy as jnp\ng = jax.checkpoint(lambda x, w: 1.0 + jnp.matmul(x, w))"),
        Invalid(
            (
                "from flax import nnx\nclass N(nnx.Module):\n    def __init__(self, rngs):\n"
                "        self.proj = nnx.Linear(4, 4, rngs=rngs)\n    def __call__(self, x):\n"
                "        def run(proj, h):\n            return proj(h)\n        return nnx.remat(run)(self.proj, x)"
            )
        ),
    ]

    def check(self) -> None:
        bodies = {id(fn.site): fn for fn in self.ctx.bodies.functions if fn.entry}
        for site in self.ctx.sites:
            if site.target is None or site.keywords or site.positional or site.has_star_args:
                continue  # any configuration (a policy, prevent_cse for a scan body...) is deliberate
            layer = self._linear_layer(site, bodies.get(id(site)))
            if layer is not None:
                self.report(
                    site.node,
                    f"`{site.api.display}` around the single linear layer {layer} saves no memory. Its backward pass "
                    "needs only its inputs, which the checkpoint saves anyway: measured on JAX 0.10.2, the same residuals as without "
                    "it and no lower temp memory; checkpoint a block with nonlinear work instead",
                )

    def _linear_layer(self, site: RematSite, fn: CheckpointedFunction | None) -> str | None:
        layer = site.target
        qname = self.ctx.qualified_name(layer) if layer is not None else None
        if layer is not None and (
            (site.api.family == "flax" and qname in LINEAR_CLASSES) or (site.api.family == "jax" and qname in MATMULS)
        ):
            return f"`{self.ctx.code(layer)}`"
        if isinstance(layer, cst.BaseExpression) and self._linear_instance(layer):
            return f"`{self.ctx.code(layer)}`"  # hk.remat(hk.Linear(4)): an instance
        applied = self._applied_layer(site, fn)
        if applied is not None:
            return f"`{self.ctx.code(applied)}`"
        if fn is None or fn.star_args or fn.bound:
            return None
        returned = _single_return(fn.node)
        if returned is not None and self._is_affine(returned, {p.name.value for p in fn.args}):
            return f"`{self.ctx.code(returned)}`"
        return None

    def _linear_instance(self, expr: cst.BaseExpression) -> bool:
        built = construction_of(self.ctx.values, expr)
        return built is not None and self.ctx.qualified_name(built.func) in LINEAR_LAYERS

    def _applied_layer(self, site: RematSite, fn: CheckpointedFunction | None) -> cst.BaseExpression | None:
        """``nnx.remat(lambda proj, h: proj(h))(self.proj, x)`` (or a nested ``def`` that only
        returns ``proj(h)``): a function that only applies its first argument to the second,
        applied at once to a linear layer instance: that layer."""
        node = fn.node if fn is not None else site.target if isinstance(site.target, cst.Lambda) else None
        body = _single_return(node) if isinstance(node, (cst.FunctionDef, cst.Lambda)) else None
        params = node.params.params if isinstance(node, (cst.FunctionDef, cst.Lambda)) else ()
        if not (
            isinstance(body, cst.Call)
            and len(params) == 2
            and isinstance(body.func, cst.Name)
            and body.func.value == params[0].name.value
            and len(body.args) == 1
            and body.args[0].keyword is None
            and not body.args[0].star
            and _is_param(body.args[0].value, {params[1].name.value})
        ):
            return None
        applied = self.ctx.model.parent(site.node)
        if not isinstance(applied, cst.Call) or applied.func is not site.node or not applied.args:
            return None
        first = applied.args[0]
        if first.keyword is not None or first.star or not self._linear_instance(first.value):
            return None
        return first.value

    def _is_affine(self, expr: cst.BaseExpression, params: set[str]) -> bool:
        """``x @ w``, ``jnp.dot(x, w)``, optionally plus a bias (``b + x @ w`` too): a parameter of
        the function or a number (``+ 1.0``, a constant)."""
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
            return any(
                self._is_product(product, params) and (_is_param(bias, params) or self._is_number(bias))
                for product, bias in ((expr.left, expr.right), (expr.right, expr.left))
            )
        return self._is_product(expr, params)

    def _is_number(self, expr: cst.BaseExpression) -> bool:
        held = self.ctx.values.possible(expr)
        return bool(held) and all(v.kind in ("int", "float") for v in held or ())

    def _is_product(self, expr: cst.BaseExpression, params: set[str]) -> bool:
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.MatrixMultiply):
            return _is_param(expr.left, params) and _is_param(expr.right, params)
        if not isinstance(expr, cst.Call) or any(a.keyword is not None or a.star for a in expr.args):
            return False
        qname = self.ctx.qualified_name(expr.func)
        spec = self.ctx.values.single(expr.args[0].value) if qname in EINSUMS and len(expr.args) == 3 else None
        if spec is not None and spec.kind == "str":
            return all(_is_param(a.value, params) for a in expr.args[1:])  # einsum("bi,io->bo", x, w)
        return qname in MATMULS and len(expr.args) == 2 and all(_is_param(a.value, params) for a in expr.args)


def _single_return(node: cst.FunctionDef | cst.Lambda) -> cst.BaseExpression | None:
    if isinstance(node, cst.Lambda):
        return node.body
    body = node.body.body
    if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine) or len(body[0].body) != 1:
        return None
    statement = body[0].body[0]
    return statement.value if isinstance(statement, cst.Return) else None


def _is_param(expr: cst.BaseExpression, params: set[str]) -> bool:
    return isinstance(expr, cst.Name) and expr.value in params
