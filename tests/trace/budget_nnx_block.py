"""A Flax NNX transformer block for tests/trace/test_budget.py: attention under ``nnx.remat`` and the MLP
under ``jax.checkpoint``, each with a policy, and a ``checkpoint_name`` in the MLP. Sizes are tiny (one
compile takes milliseconds) but chosen so that 0.5 of the no-checkpoint peak temp can be met and 0.3
cannot; only shapes are built (``nnx.eval_shape``), the search needs no values."""

import jax
import jax.numpy as jnp
from flax import nnx
from jax.ad_checkpoint import checkpoint_name

WIDTH, HEADS, TOKENS = 32, 2, 16


class Attention(nnx.Module):
    def __init__(self, rngs: nnx.Rngs) -> None:
        self.norm = nnx.LayerNorm(WIDTH, rngs=rngs)
        self.qkv = nnx.Linear(WIDTH, 3 * WIDTH, rngs=rngs)
        self.out = nnx.Linear(WIDTH, WIDTH, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        heads = self.qkv(self.norm(x)).reshape(TOKENS, 3 * HEADS, WIDTH // HEADS)
        q, k, v = jnp.split(heads, 3, axis=1)
        weights = jax.nn.softmax(jnp.einsum("qhd,khd->hqk", q, k) / (WIDTH // HEADS) ** 0.5)
        return self.out(jnp.einsum("hqk,khd->qhd", weights, v).reshape(TOKENS, WIDTH))


class Block(nnx.Module):
    def __init__(self, rngs: nnx.Rngs) -> None:
        self.attention = Attention(rngs)
        self.norm = nnx.LayerNorm(WIDTH, rngs=rngs)
        self.up = nnx.Linear(WIDTH, 4 * WIDTH, rngs=rngs)
        self.down = nnx.Linear(4 * WIDTH, WIDTH, rngs=rngs)

    def mlp(self, x: jax.Array) -> jax.Array:
        return self.down(jax.nn.gelu(checkpoint_name(self.up(self.norm(x)), "up")))

    def __call__(self, x: jax.Array) -> jax.Array:
        attend = nnx.remat(Attention.__call__, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)
        x = x + attend(self.attention, x)
        return x + jax.checkpoint(self.mlp, policy=jax.checkpoint_policies.dots_saveable)(x)


graphdef, state = nnx.split(nnx.eval_shape(lambda: Block(nnx.Rngs(0))))
x = jax.ShapeDtypeStruct((TOKENS, WIDTH), jnp.float32)


def loss(state: nnx.State, x: jax.Array) -> jax.Array:
    return jnp.mean(nnx.merge(graphdef, state)(x) ** 2)
