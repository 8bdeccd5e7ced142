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
