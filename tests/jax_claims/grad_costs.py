"""Compiled FLOPs and temp bytes of checkpoint placements around grad (REM101, REM102, REM103,
REM301 claims). Run as a script with ``XLA_FLAGS=--xla_disable_hlo_passes=cse_barrier_expander``
(set before JAX starts: XLA:CPU otherwise strips the optimization barriers that keep the
recomputation apart, as GPU/TPU compilers do not); prints one JSON object.

The model: pre-LN residual-MLP blocks (they have internal residuals worth not saving), 6 blocks,
width 128, batch 128, float32; abstract inputs only.
"""

import json
import sys

import jax
import jax.numpy as jnp

L, D, B = 6, 128, 128
ck = jax.checkpoint


def block(p, x):
    w1, w2 = p
    h = (x - jnp.mean(x, -1, keepdims=True)) * jax.lax.rsqrt(jnp.var(x, -1, keepdims=True) + 1e-5)
    return x + jax.nn.gelu(h @ w1) @ w2


def stack(ps, x, f=block):
    for p in ps:
        x = f(p, x)
    return x


def loss(ps, x):
    return jnp.mean(stack(ps, x) ** 2)


def l2(ps):
    return 1e-4 * sum(jnp.sum(w**2) for p in ps for w in p)


def with_aux(ps, x):
    out = stack(ps, x)
    return jnp.mean(out**2), jnp.max(out)


def with_last_stage(last):
    """The first 4 blocks, then ``last`` (the last 2 blocks and the loss) as one stage."""
    return lambda ps, x: last(ps[4:], stack(ps[:4], x))


def per_layer(prevent_cse):
    f = ck(block, prevent_cse=prevent_cse)
    return lambda ps, x: jnp.mean(stack(ps, x, f) ** 2)


def scan_body(x, p):
    return block(p, x), None


def scanned(body):
    return lambda ws, x: jnp.mean(jax.lax.scan(body, x, ws)[0] ** 2)


def vjp_of(f):
    def pullback(ps, x):
        out, pull = jax.vjp(f, ps, x)
        return out, pull(jnp.ones_like(out))

    return pullback


def cost(fn, *args):
    compiled = jax.jit(fn).lower(*args).compile()
    analysis = compiled.cost_analysis()
    analysis = analysis[0] if isinstance(analysis, list) else analysis
    return {"flops": analysis["flops"], "temp": compiled.memory_analysis().temp_size_in_bytes}


def main():
    sds = jax.ShapeDtypeStruct
    ps = [(sds((D, 4 * D), jnp.float32), sds((4 * D, D), jnp.float32)) for _ in range(L)]
    x = sds((B, D), jnp.float32)
    stacked = (sds((L, D, 4 * D), jnp.float32), sds((L, 4 * D, D), jnp.float32))
    tiny_ps = [(sds((8, 16), jnp.float32), sds((16, 8), jnp.float32)) for _ in range(2)]
    tiny_x = sds((2, 8), jnp.float32)
    grad, vag = cost(jax.grad(loss), ps, x), cost(jax.value_and_grad(loss), ps, x)
    costs = {
        # [without the checkpoint, with it]
        "grad": [grad, cost(jax.grad(ck(loss)), ps, x)],
        "value_and_grad": [vag, cost(jax.value_and_grad(ck(loss)), ps, x)],
        "vjp": [cost(vjp_of(loss), ps, x), cost(vjp_of(ck(loss)), ps, x)],
        "grad has_aux": [
            cost(jax.grad(with_aux, has_aux=True), ps, x),
            cost(jax.grad(ck(with_aux), has_aux=True), ps, x),
        ],
        "jacrev": [cost(jax.jacrev(loss), ps, x), cost(jax.jacrev(ck(loss)), ps, x)],
        "jacfwd": [cost(jax.jacfwd(loss, 1), tiny_ps, tiny_x), cost(jax.jacfwd(ck(loss), 1), tiny_ps, tiny_x)],
        "hessian": [cost(jax.hessian(loss, 1), tiny_ps, tiny_x), cost(jax.hessian(ck(loss), 1), tiny_ps, tiny_x)],
        "grad dots_saveable": [grad, cost(jax.grad(ck(loss, policy=jax.checkpoint_policies.dots_saveable)), ps, x)],
        "last stage grad": [grad, cost(jax.grad(with_last_stage(ck(loss))), ps, x)],
        "last stage value_and_grad": [vag, cost(jax.value_and_grad(with_last_stage(ck(loss))), ps, x)],
        # the same, with the squared mean outside the checkpoint: its gradient needs the stage's output
        "last stage grad, tail outside": [
            grad,
            cost(jax.grad(with_last_stage(lambda ps, x: jnp.mean(ck(stack)(ps, x) ** 2))), ps, x),
        ],
        "last stage value_and_grad, tail outside": [
            vag,
            cost(jax.value_and_grad(with_last_stage(lambda ps, x: jnp.mean(ck(stack)(ps, x) ** 2))), ps, x),
        ],
        # only a mean after the stage: value_and_grad keeps both the stage's output and its recomputation
        "last stage value_and_grad, mean outside": [
            cost(jax.value_and_grad(lambda ps, x: jnp.mean(stack(ps, x))), ps, x),
            cost(jax.value_and_grad(with_last_stage(lambda ps, x: jnp.mean(ck(stack)(ps, x)))), ps, x),
        ],
        # the 2-block stage with nothing before it (REM102's whole stage)
        "last stage grad after 1 block, tail outside": [
            cost(jax.grad(loss), ps[3:], x),
            cost(jax.grad(lambda ps, x: jnp.mean(ck(stack)(ps[1:], block(ps[0], x)) ** 2)), ps[3:], x),
        ],
        "whole stage grad, tail outside": [
            cost(jax.grad(loss), ps[4:], x),
            cost(jax.grad(lambda ps, x: jnp.mean(ck(stack)(ps, x) ** 2)), ps[4:], x),
        ],
        "whole stage value_and_grad, mean outside": [
            cost(jax.value_and_grad(lambda ps, x: jnp.mean(stack(ps, x))), ps[4:], x),
            cost(jax.value_and_grad(lambda ps, x: jnp.mean(ck(stack)(ps, x))), ps[4:], x),
        ],
        # A checkpointed data loss plus an L2 penalty outside it (REM102: the stage is all the expensive work).
        "penalty outside value_and_grad": [
            cost(jax.value_and_grad(lambda ps, x: loss(ps, x) + l2(ps)), ps, x),
            cost(jax.value_and_grad(lambda ps, x: ck(loss)(ps, x) + l2(ps)), ps, x),
        ],
        # [no checkpoint, per-layer checkpoint, the same with prevent_cse=False]
        "per layer": [grad, cost(jax.grad(per_layer(True)), ps, x), cost(jax.grad(per_layer(False)), ps, x)],
        # [scan body without a checkpoint, with one, with one and prevent_cse=False]
        "scan": [
            cost(jax.grad(scanned(scan_body)), stacked, x),
            cost(jax.grad(scanned(ck(scan_body))), stacked, x),
            cost(jax.grad(scanned(ck(scan_body, prevent_cse=False))), stacked, x),
        ],
    }
    json.dump(costs, sys.stdout)


if __name__ == "__main__":
    main()
