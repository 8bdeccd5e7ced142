import json
from pathlib import Path

import jax
import jax.numpy as jnp

from stack.policies import policy

CONFIG = json.loads((Path(__file__).parent / "config.json").read_text())


def encoder_block(p, x):
    return x + jax.nn.gelu(x @ p["up"]) @ p["down"]


def decoder_block(p, x):
    return x + jnp.tanh(x @ p["up"]) @ p["down"]


encode = jax.checkpoint(encoder_block, policy=policy(CONFIG["encoder_policy"]))
decode = jax.checkpoint(decoder_block, policy=policy(CONFIG["decoder_policy"]))


def loss(params, x):
    h = x
    for p in params["encoder"]:
        h = encode(p, h)
    for p in params["decoder"]:
        h = decode(p, h)
    return jnp.mean((h - x) ** 2)


def init(key, width, depth):
    def block(k):
        a, b = jax.random.split(k)
        return {
            "up": 0.05 * jax.random.normal(a, (width, 4 * width)),
            "down": 0.05 * jax.random.normal(b, (4 * width, width)),
        }

    keys = jax.random.split(key, 2 * depth)
    return {"encoder": [block(k) for k in keys[:depth]], "decoder": [block(k) for k in keys[depth:]]}
