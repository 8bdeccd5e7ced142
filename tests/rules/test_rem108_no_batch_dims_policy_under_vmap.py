"""REM108 reports a no-batch-dims policy under vmap only where every product is certainly batched:
every argument mapped, every operand computed from the arguments, a body it can follow. It never
crashes on partial or odd code."""

from __future__ import annotations

import pytest

from tests.helpers import lint

HEAD = "import jax\nimport jax.numpy as jnp\ncp = jax.checkpoint_policies\nW = jnp.ones((4, 4))\n"
POLICY = "cp.dots_with_no_batch_dims_saveable"


def rows(source: str) -> list[tuple[str, int, int]]:
    return [(f.code, f.start.row, f.start.column) for f in lint(HEAD + source, {"REM108"})]


def mapped(body: str, in_axes: str = "", policy: str = POLICY) -> str:
    return f"{body}\ng = jax.vmap(jax.checkpoint(f, policy={policy}){in_axes})\n"


BATCHED = "def f(x, w):\n    h = jnp.tanh(x @ w)\n    return h @ w"


@pytest.mark.parametrize(
    ("source", "row"),
    [
        (mapped(BATCHED), 8),
        (mapped(BATCHED, ", in_axes=(0, 2)"), 8),
        (mapped('def f(x, w):\n    """Doc."""\n    return x @ w'), 8),
        (mapped("def f(x, p):\n    return jax.nn.relu(-x[0] @ p['w']) @ (p['v'] + 1.0)", ", 1"), 7),
        ("f = lambda x, w: jnp.einsum('ij,jk->ik', x, w)\n" + "g = jax.vmap(jax.checkpoint(f, policy=P))\n", 6),
        (
            "from flax import nnx\n"
            + mapped(BATCHED).replace("jax.vmap", "nnx.vmap").replace("jax.checkpoint", "nnx.remat"),
            9,
        ),
        ("from flax import nnx\n" + mapped(BATCHED, ", in_axes=(0, 0)").replace("jax.vmap", "nnx.vmap"), 9),
        (mapped("def f(q, k, v):\n    s = jax.nn.softmax(q @ k.T)\n    return s @ v"), 8),
        ("from flax import nnx\n@nnx.vmap\n@nnx.remat(policy=P)\ndef f(x, w):\n    return x @ w\n", 7),
    ],
    ids=[
        "default",
        "tuple",
        "docstring",
        "pytree-and-operators",
        "einsum-through-a-name",
        "nnx-remat-in-nnx-vmap",
        "nnx-vmap-in-axes",
        "attention-transpose",
        "nnx-decorators",
    ],
)
def test_reports_on_the_policy_when_every_product_is_batched(source, row):
    source = source.replace("policy=P)", f"policy={POLICY})")
    [(code, found_row, column)] = rows(source)
    assert (code, found_row) == ("REM108", row)
    assert HEAD.count("\n") < found_row and column > 0


@pytest.mark.parametrize(
    "source",
    [
        mapped(BATCHED, ", in_axes=(0, None)"),
        mapped(BATCHED, ", in_axes=AXES"),
        mapped(BATCHED, ", in_axes=-1"),
        mapped(BATCHED, policy="cp.dots_saveable"),
        mapped(BATCHED, policy="POLICY"),
        mapped("def f(x, w):\n    return jnp.tanh(x @ w) @ W"),
        mapped("def f(x, w):\n    return jnp.tanh(x @ w) @ jnp.eye(4)"),
        mapped("def f(x, w):\n    return x @ jnp.ones_like(w)"),
        mapped("def f(x, w):\n    return x @ w.shape"),
        mapped("def f(x, w=W):\n    return x @ w"),
        mapped("def f(x, *, w):\n    return x @ w"),
        mapped("def f(x, *ws):\n    for w in ws:\n        x = x @ w\n    return x"),
        mapped("def f(x, w):\n    return helper(x, w)"),
        mapped("def f(x, w):\n    return x.dot(w)"),
        mapped("def f(x, w):\n    return jnp.tanh(x) + w"),
        mapped("def f(x, w):\n    def inner(y):\n        return y @ W\n    return inner(x @ w)"),
        "def f(x, w):\n    return x @ w\ng = jax.checkpoint(f, policy=cp.dots_with_no_batch_dims_saveable)\n",
        "def f(x, w):\n    return x @ w\nk = jax.checkpoint(f, policy=cp.dots_with_no_batch_dims_saveable)\ng = jax.vmap(k)\n",
        "def f(x, w):\n    return x @ w\n"
        "g = jax.vmap(jax.checkpoint(f, policy=cp.dots_with_no_batch_dims_saveable), *axes)\n",
        "import functools\n@functools.partial(jax.vmap, in_axes=(0, None))\n"
        "@functools.partial(jax.checkpoint, policy=cp.dots_with_no_batch_dims_saveable)\ndef f(x, w):\n    return x @ w\n",
        "import functools\n@functools.partial(jax.checkpoint, policy=cp.dots_with_no_batch_dims_saveable)\n"
        "@jax.vmap\ndef f(x, w):\n    return x @ w\n",
        "import flax.linen as nn\ndef f(x, w):\n    return x @ w\n"
        "g = nn.vmap(jax.checkpoint(f, policy=cp.dots_with_no_batch_dims_saveable))\n",
        "from flax import nnx\ndef f(x, w):\n    return x @ w\n"
        "g = nnx.vmap(jax.checkpoint(f, policy=cp.dots_with_no_batch_dims_saveable), in_axes=(0, None))\n",
        "g = jax.vmap(jax.checkpoint(f, policy=cp.dots_with_no_batch_dims_saveable))\n",
        "g = jax.vmap(jax.checkpoint(policy=cp.dots_with_no_batch_dims_saveable))\n",
        "g = jax.vmap()\n",
        "def f(x, w):\n    return x @ w\n"
        "g = jax.vmap(jax.checkpoint(f, policy=cp.dots_with_no_batch_dims_saveable, static_argnums=(1,)))\n",
        "def f(x, w):\n    return x @ w\n"
        "g = jax.vmap(jax.checkpoint(f, policy=cp.dots_with_no_batch_dims_saveable, **options))\n",
    ],
    ids=[
        "shared-weight",
        "unknown-in-axes",
        "negative-axis",
        "dots-saveable",
        "unknown-policy",
        "module-array",
        "built-in-body",
        "ones-like",
        "other-attribute",
        "default",
        "keyword-only",
        "loop",
        "helper",
        "method",
        "no-product",
        "nested-def",
        "not-mapped",
        "mapped-through-a-name",
        "star-axes",
        "partial-vmap",
        "vmap-below",
        "linen-vmap",
        "nnx-vmap-shared",
        "undefined-body",
        "no-target",
        "empty-vmap",
        "static-argument",
        "spread-options",
    ],
)
def test_silent_where_a_product_may_be_unbatched_or_the_code_is_unknown(source):
    assert rows(source) == []


LINEN_BODY = "h = jnp.tanh(nn.Dense(4)(x))\n        return nn.Dense(4)(h)"
ENSEMBLE = ', variable_axes={"params": 0}, split_rngs={"params": True}'


def linen(body: str = LINEN_BODY, options: str = ENSEMBLE, call: str = "__call__(self, x)") -> str:
    """A linen Module with ``body`` in its ``__call__``, checkpointed and mapped by ``nn.vmap``."""
    return (
        "import flax.linen as nn\n"
        f"class Block(nn.Module):\n    @nn.compact\n    def {call}:\n        {body}\n"
        f"g = nn.vmap(nn.remat(Block, policy={POLICY}){options})\n"
    )


@pytest.mark.parametrize(
    "source",
    [
        linen(),
        linen(options=", variable_axes={'params': 1, 'batch_stats': 0}, split_rngs={'params': True}, in_axes=(0,)"),
        linen(options=", dict(params=0), {'params': True}, 0"),
        linen("w = self.param('w', nn.initializers.lecun_normal(), (x.shape[-1], 4))\n        return jnp.tanh(x @ w)"),
        linen("return nn.Dense(4, use_bias=False)(x) @ self.param('v', nn.initializers.zeros, (4, 4))"),
        linen(call="__call__(self, x, y)", body="return nn.Dense(4)(x) @ y.T"),
        "AXES = {'params': 0}\n" + linen(options=", variable_axes=AXES, split_rngs={'params': True}"),
    ],
    ids=["dense", "axis-one-and-tuple", "positional", "self-param", "dense-times-param", "two-inputs", "named-axes"],
)
def test_reports_linen_vmap_of_a_module_whose_parameters_and_inputs_are_mapped(source):
    [(code, row, _)] = rows(source)
    assert (code, row) == ("REM108", HEAD.count("\n") + source.count("\n"))


@pytest.mark.parametrize(
    "source",
    [
        linen(options=', variable_axes={"params": None}, split_rngs={"params": False}'),
        linen(options=""),
        linen(options=", variable_axes=AXES"),
        linen(options=", variable_axes={True: 0}"),
        linen(options=", variable_axes={'params': -1}"),
        linen(options=", variable_axes={'params': AXIS}"),
        linen(options=", variable_axes={**AXES, 'params': 0}"),
        linen(options=ENSEMBLE + ", in_axes=None, axis_size=3"),
        linen(options=ENSEMBLE + ", in_axes=(0, None)", call="__call__(self, x, y)", body="return nn.Dense(4)(x) @ y"),
        linen(options=ENSEMBLE + ", methods=['encode']"),
        linen(options=ENSEMBLE + ", **options"),
        linen("return nn.Dense(4, dot_general=custom)(x)"),
        linen("return nn.DenseGeneral(4)(x)"),
        linen("return nn.Dense(4)(x, y)"),
        linen("return nn.Dense(4)(x) @ W"),
        linen("return nn.Dense(4)(x) @ self.scale"),
        linen("return nn.Dropout(0.1)(nn.Dense(4)(x), deterministic=False)"),
        linen("return helper(nn.Dense(4)(x))"),
        linen("for _ in range(2):\n            x = nn.Dense(4)(x)\n        return x"),
        linen("return jnp.tanh(x)"),
        linen(call="__call__(self, x, train=True)"),
        linen(call="encode(self, x)"),
        linen(call="encode(self, x)").replace(f"policy={POLICY})", f"policy={POLICY}, methods=['encode'])"),
        linen("w = other.param('w', init, (4, 4))\n        return x @ w"),
        "import flax.linen as nn\nclass Block(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n"
        "        return nn.remat(Inner, policy=P)()(x)\ng = nn.vmap(Block, variable_axes={'params': 0})\n",
        "import flax.linen as nn\nclass Block(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n"
        f"        return nn.Dense(4)(x)\ng = nn.remat(nn.vmap(Block, variable_axes={{'params': 0}}), policy={POLICY})\n",
        "import flax.linen as nn\nfrom models import Block\n"
        f"g = nn.vmap(nn.remat(Block, policy={POLICY}), variable_axes={{'params': 0}})\n",
        "import flax.linen as nn\nclass Block(nn.Module):\n    def setup(self):\n        self.dense = nn.Dense(4)\n"
        f"    def __call__(self, x):\n        return self.dense(x)\ng = nn.vmap(nn.remat(Block, policy={POLICY}), variable_axes={{'params': 0}})\n",
    ],
    ids=[
        "params-shared",
        "no-variable-axes",
        "unknown-variable-axes",
        "every-collection-key",
        "negative-params-axis",
        "unknown-params-axis",
        "spread-variable-axes",
        "input-unmapped",
        "input-shared",
        "other-methods",
        "spread-options",
        "custom-dot-general",
        "dense-general",
        "dense-two-arguments",
        "module-array",
        "field",
        "dropout",
        "helper",
        "loop",
        "no-product",
        "default-argument",
        "not-call",
        "remat-of-another-method",
        "other-param",
        "remat-inside-the-mapped-module",
        "vmap-inside-remat",
        "imported-module",
        "setup-layer",
    ],
)
def test_silent_on_linen_vmap_unless_parameters_and_inputs_are_certainly_mapped(source):
    assert rows(source.replace("policy=P)", f"policy={POLICY})")) == []


def local(*lines: str) -> str:
    """A function that binds a checkpoint to a local name ``k``, then runs ``lines``."""
    return "\n".join(
        [
            "def f(x, w):\n    return x @ w",
            "def make():",
            f"    k = jax.checkpoint(f, policy={POLICY})",
            *(f"    {line}" for line in lines),
        ]
    )


@pytest.mark.parametrize(
    "source",
    [
        local("return jax.vmap(k)"),
        local("return jax.vmap(k), jax.vmap(k, in_axes=(0, 1))"),
        local("def inner():", "    return jax.vmap(k)", "return inner"),
        local("k = jax.vmap(k)", "return k"),
    ],
    ids=["mapped", "mapped-twice", "mapped-in-a-closure", "rebound-to-its-map"],
)
def test_reports_a_local_name_that_is_only_mapped_over_every_argument(source):
    [(code, row, column)] = rows(source)
    assert (code, row, column) == ("REM108", HEAD.count("\n") + 4, 33)


@pytest.mark.parametrize(
    "source",
    [
        local("return jax.vmap(k), k"),
        local("return jax.vmap(k, in_axes=(0, None))"),
        local("return jax.vmap(k, in_axes=AXES)"),
        local("pass"),
        local("return jax.vmap(fun=k)"),
        local("return jax.jit(k)"),
        local("global k", "return jax.vmap(k)"),
        local("return nn.vmap(k, variable_axes={'params': 0})").replace("def f", "import flax.linen as nn\ndef f"),
        "def f(x, w):\n    return x @ w\n"
        f"k = jax.checkpoint(f, policy={POLICY})\ndef make():\n    return jax.vmap(k)\n",
    ],
    ids=[
        "also-unmapped",
        "shared-weight",
        "unknown-in-axes",
        "unused",
        "keyword-function",
        "jit",
        "global",
        "linen-vmap",
        "module-level-name",
    ],
)
def test_silent_on_a_name_that_may_be_called_unmapped(source):
    assert rows(source) == []
