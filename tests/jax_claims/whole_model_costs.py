"""Whole-model checkpoints whose only tail is the loss (REM102): compiled FLOPs and temp bytes with
and without the checkpoint. Run with the optimization barriers kept, as GPU/TPU compilers keep
them (set before JAX starts):

    XLA_FLAGS=--xla_disable_hlo_passes=cse_barrier_expander JAX_PLATFORMS=cpu \\
        python tests/jax_claims/whole_model_costs.py [--sweep]

Each configuration compiles ``transform(loss)`` twice on abstract inputs, plain and with the whole
forward pass checkpointed: ``loss = tail(checkpoint(forward)(params, x), y)``. The forward is a
stack of ``depth`` layers of one kind (a tanh MLP layer, a pre-LN residual-MLP block).

Without ``--sweep``: the subset tests/jax_claims/test_whole_model.py pins, plus the same
checkpoint spelled ``nn.remat(MLP)()``, ``nnx.remat(lambda m: m(x))(model)``,
``eqx.filter_checkpoint(model)`` and ``hk.remat(mlp)``, as one JSON object. With ``--sweep``:
192 configurations (layer kind, depth 1/2/4/8, batch x width 8x32/64x128/256x512, four tails,
grad and value_and_grad) as a table; the results are in docs/whole-model-checkpoints.md.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from dataclasses import dataclass

import jax
import jax.numpy as jnp


def mlp_layer(p, x):
    w, b = p
    return jnp.tanh(x @ w + b)


def residual_block(p, x):
    w1, w2 = p
    h = (x - jnp.mean(x, -1, keepdims=True)) * jax.lax.rsqrt(jnp.var(x, -1, keepdims=True) + 1e-5)
    return x + jax.nn.gelu(h @ w1) @ w2


LAYERS = {"mlp": mlp_layer, "residual": residual_block}
TAILS = {
    "squared error": lambda out, y: jnp.mean((out - y) ** 2),
    "cross-entropy": lambda out, y: -jnp.mean(jnp.sum(jax.nn.log_softmax(out) * y, -1)),
    "mean": lambda out, y: jnp.mean(out),
    "sum": lambda out, y: jnp.sum(out),
}
TRANSFORMS = {"grad": jax.grad, "value_and_grad": jax.value_and_grad}


@dataclass(frozen=True)
class Config:
    layer: str
    depth: int
    batch: int
    width: int
    tail: str
    transform: str

    @property
    def key(self) -> str:
        return f"{self.layer} {self.depth} {self.batch}x{self.width} {self.tail} {self.transform}"


def forward_of(layer):
    def forward(ps, x):
        for p in ps:
            x = layer(p, x)
        return x

    return forward


def abstract_inputs(c: Config):
    sds, f32 = jax.ShapeDtypeStruct, jnp.float32
    if c.layer == "mlp":
        ps = [(sds((c.width, c.width), f32), sds((c.width,), f32)) for _ in range(c.depth)]
    else:
        ps = [(sds((c.width, 4 * c.width), f32), sds((4 * c.width, c.width), f32)) for _ in range(c.depth)]
    x = sds((c.batch, c.width), f32)
    return ps, x, x


def cost(fn, *args) -> dict[str, float]:
    compiled = jax.jit(fn).lower(*args).compile()
    analysis = compiled.cost_analysis()
    analysis = analysis[0] if isinstance(analysis, list) else analysis
    return {"flops": analysis["flops"], "temp": compiled.memory_analysis().temp_size_in_bytes}


def measure(c: Config) -> list[dict[str, float]]:
    """[without the checkpoint, with it]"""
    forward, tail, transform = forward_of(LAYERS[c.layer]), TAILS[c.tail], TRANSFORMS[c.transform]
    checkpointed = jax.checkpoint(forward)
    args = abstract_inputs(c)
    return [
        cost(transform(lambda ps, x, y: tail(forward(ps, x), y)), *args),
        cost(transform(lambda ps, x, y: tail(checkpointed(ps, x), y)), *args),
    ]


def pinned() -> list[Config]:
    cases = [
        ("squared error", "grad"),
        ("squared error", "value_and_grad"),
        ("cross-entropy", "grad"),
        ("mean", "grad"),
        ("mean", "value_and_grad"),
    ]
    depths = {"mlp": (4,), "residual": (1, 4)}
    return [Config(layer, depth, 64, 128, *case) for layer in LAYERS for depth in depths[layer] for case in cases]


def swept() -> list[Config]:
    return [
        Config(layer, depth, batch, width, tail, transform)
        for layer, depth, (batch, width), tail, transform in itertools.product(
            LAYERS, (1, 2, 4, 8), ((8, 32), (64, 128), (256, 512)), TAILS, TRANSFORMS
        )
    ]


def framework_spellings() -> dict[str, list[dict[str, float]]]:
    """A 4-layer tanh MLP (64x128) with a squared error, under grad, checkpointed whole by each
    framework's remat: [without, with] per spelling."""
    import equinox as eqx
    import flax.linen as nn
    import haiku as hk
    from flax import nnx

    width, depth = 128, 4
    x = jnp.ones((64, width))
    tail = TAILS["squared error"]

    class Linen(nn.Module):
        @nn.compact
        def __call__(self, x):
            for _ in range(depth):
                x = jnp.tanh(nn.Dense(width)(x))
            return x

    class Nnx(nnx.Module):
        def __init__(self, rngs):
            self.layers = nnx.List([nnx.Linear(width, width, rngs=rngs) for _ in range(depth)])

        def __call__(self, x):
            for layer in self.layers:
                x = jnp.tanh(layer(x))
            return x

    params = Linen().init(jax.random.key(0), x)
    graphdef, state = nnx.split(Nnx(nnx.Rngs(0)))
    mlp = eqx.nn.MLP(width, width, width, depth - 1, activation=jnp.tanh, key=jax.random.key(0))
    arrays, static = eqx.partition(mlp, eqx.is_array)

    def linen(model):
        return cost(jax.grad(lambda p, x, y: tail(model.apply(p, x), y)), params, x, x)

    def nnx_model(remat: bool):
        def loss(state, x, y):
            model = nnx.merge(graphdef, state)
            return tail(nnx.remat(lambda m: m(x))(model) if remat else model(x), y)

        return cost(jax.grad(loss), state, x, x)

    def equinox(remat: bool):
        def loss(arrays, x, y):
            model = jax.vmap(eqx.combine(arrays, static))
            return tail((eqx.filter_checkpoint(model) if remat else model)(x), y)

        return cost(jax.grad(loss), arrays, x, x)

    def haiku(remat: bool):
        def forward(x):
            mlp = hk.nets.MLP([width] * depth, activation=jnp.tanh, activate_final=True)
            return (hk.remat(mlp) if remat else mlp)(x)

        model = hk.transform(forward)
        hk_params = model.init(jax.random.key(0), x)
        return cost(jax.grad(lambda p, x, y: tail(model.apply(p, None, x), y)), hk_params, x, x)

    return {
        "nn.remat": [linen(Linen()), linen(nn.remat(Linen)())],
        "hk.remat": [haiku(False), haiku(True)],
        "nnx.remat": [nnx_model(False), nnx_model(True)],
        "eqx.filter_checkpoint": [equinox(False), equinox(True)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep", action="store_true", help="the full sweep, as a table")
    if not parser.parse_args().sweep:
        json.dump({"configs": {c.key: measure(c) for c in pinned()}, "spellings": framework_spellings()}, sys.stdout)
        return
    for c in swept():
        (flops0, temp0), (flops1, temp1) = ((r["flops"], r["temp"]) for r in measure(c))
        print(
            f"| {c.layer} | {c.depth} | {c.batch}x{c.width} | {c.tail} | {c.transform} "
            f"| {flops1 / flops0 - 1:+.1%} | {temp1 / temp0 - 1:+.1%} | {temp0} | {temp1} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
