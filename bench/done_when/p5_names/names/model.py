import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

from names.settings import SAVE


def attention(p, x):
    q, k, v = x @ p["q"], x @ p["k"], x @ p["v"]
    weights = checkpoint_name(jax.nn.softmax(q @ k.T / jnp.sqrt(q.shape[-1])), "attention_weights")
    return x + checkpoint_name(weights @ v, "attention_output") @ p["o"]


def mlp(p, x):
    return x + checkpoint_name(jax.nn.gelu(x @ p["up"]), "mlp_hidden") @ p["down"]


def save(kind):
    return jax.checkpoint_policies.save_only_these_names(*SAVE[kind])


attention_block = jax.checkpoint(attention, policy=save("attention"))
mlp_block = jax.checkpoint(mlp, policy=save("mlp"))


def loss(params, x):
    for p in params:
        x = mlp_block(p, attention_block(p, x))
    return jnp.mean(x**2)


def init(key, width, depth):
    shapes = {
        "q": (width, width),
        "k": (width, width),
        "v": (width, width),
        "o": (width, width),
        "up": (width, 4 * width),
        "down": (4 * width, width),
    }
    out = []
    for layer_key in jax.random.split(key, depth):
        keys = jax.random.split(layer_key, len(shapes))
        out.append({n: 0.05 * jax.random.normal(k, s) for k, (n, s) in zip(keys, shapes.items(), strict=True)})
    return out
