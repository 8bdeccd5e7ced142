import json
from pathlib import Path

import jax
import jax.numpy as jnp
from flax import nnx

from regress.memory import WRAPPERS

CONFIG = json.loads((Path(__file__).parent / "config.json").read_text())


class Denoiser(nnx.Module):
    def __init__(self, width, depth, rngs):
        self.layers = nnx.List([nnx.Linear(width, width, rngs=rngs) for _ in range(depth)])

    def __call__(self, x):
        for layer in self.layers:
            x = jnp.tanh(layer(x))
        return x


class Regressor(Denoiser):
    def __init__(self, width, depth, rngs):
        super().__init__(width, depth, rngs)
        self.head = nnx.Linear(width, 1, rngs=rngs)

    def __call__(self, x):
        return self.head(super().__call__(x))


def denoise(model, x):
    return model(x)


def regress(model, x):
    return model(x)


def make_loss(config, predict):
    forward = WRAPPERS[config["activation_memory"]](predict)

    def loss_fn(model, x, y):
        return jnp.mean((forward(model, x) - y) ** 2)

    return loss_fn


def train_step(model, x, y, lr, predict):
    loss, grads = nnx.value_and_grad(make_loss(CONFIG, predict))(model, x, y)
    params = nnx.state(model, nnx.Param)
    nnx.update(model, jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads))
    return loss
