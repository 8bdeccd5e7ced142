import jax
import jax.numpy as jnp

DEPTH = 8  # the configuration the project trains


def _layer(p, x):
    return x + jax.nn.gelu(x @ p["up"]) @ p["down"]


layer = jax.checkpoint(_layer)


def _scanned(x, p):
    return _layer(p, x), None


def forward(params, x):
    if len(params) >= 8:  # deep models: one scanned layer compiles faster
        stacked = jax.tree_util.tree_map(lambda *a: jnp.stack(a), *params)
        x, _ = jax.lax.scan(jax.checkpoint(_scanned), x, stacked)
        return x
    for p in params:
        x = layer(p, x)
    return x


def loss(params, x, y):
    return jnp.mean((forward(params, x) - y) ** 2)


def init(key, width, depth=DEPTH):
    keys = jax.random.split(key, 2 * depth)
    return [
        {
            "up": 0.05 * jax.random.normal(keys[2 * i], (width, 4 * width)),
            "down": 0.05 * jax.random.normal(keys[2 * i + 1], (4 * width, width)),
        }
        for i in range(depth)
    ]
