"""Compiled FLOPs and temp bytes of fixtures/xmod_chain's checkpoints under the grads of train.py,
with and without the checkpoint (tests/analysis/test_project_chain.py). Run as a script with
``XLA_FLAGS=--xla_disable_hlo_passes=cse_barrier_expander`` (as tests/jax_claims/grad_costs.py, which explains
why) and the fixture's root on ``sys.path``; prints one JSON object. Abstract inputs only."""

import json
import sys

import jax
import jax.numpy as jnp
from pkg import layers, losses, model, train

L, D, B, M = 4, 128, 128, 8  # layers, width, batch, microbatches


def cost(fn, *args):
    compiled = jax.jit(fn).lower(*args).compile()
    analysis = compiled.cost_analysis()
    analysis = analysis[0] if isinstance(analysis, list) else analysis
    return {"flops": analysis["flops"], "temp": compiled.memory_analysis().temp_size_in_bytes}


def loss_without_checkpoint(params, batch):
    """model.loss with layers.head's stage called directly."""
    x, y = batch
    return jnp.mean((layers._project(params[-1], model._trunk(params, x)) - y) ** 2)


def readout_loss_without_checkpoint(params, batch):
    """model.readout_loss with layers.readout not checkpointed."""
    x, y = batch
    return jnp.mean((layers.readout.__wrapped__(params[-1], model._trunk(params, x)) - y) ** 2)


def stacked_loss_without_checkpoint(stacked, batch):
    """model.stacked_loss with layers.layer not checkpointed."""
    x, y = batch
    h, _ = jax.lax.scan(lambda h, w: (layers.layer.__wrapped__(w, h), None), x, stacked[:-1])
    return jnp.mean((layers.layer.__wrapped__(stacked[-1], h) - y) ** 2)


def accumulated_without_checkpoint(params, microbatches):
    """objectives.accumulated with losses.microbatch_loss not checkpointed."""
    loss = losses.microbatch_loss.__wrapped__
    total, _ = jax.lax.scan(lambda total, batch: (total + loss(params, batch), None), 0.0, microbatches)
    return total / microbatches[0].shape[0]


def scan_loss_without_checkpoint(stacked, batch):
    """model.scan_loss with layers.scan_head's stage called directly."""
    x, y = batch
    h, _ = jax.lax.scan(lambda h, w: (layers._project(w, h), None), x, stacked)
    return jnp.mean((h - y) ** 2)


def main():
    sds = jax.ShapeDtypeStruct
    params = [sds((D, D), jnp.float32) for _ in range(L)]
    batch = (sds((B, D), jnp.float32), sds((B, D), jnp.float32))
    microbatches = (sds((M, B, D), jnp.float32), sds((M, B, D), jnp.float32))
    stacked = sds((L, D, D), jnp.float32)
    vag = jax.value_and_grad
    costs = {  # [without the checkpoint, with it (as train.py differentiates it)]
        "REM102 loss": [cost(vag(loss_without_checkpoint), params, batch), cost(train.step, params, batch)],
        "REM102 readout_loss": [
            cost(vag(readout_loss_without_checkpoint), params, batch),
            cost(train.readout_step, params, batch),
        ],
        "REM101 objective": [
            cost(vag(losses.loss_fn.__wrapped__), params, batch),
            cost(train.wrapper_step, params, batch),
        ],
        "quiet accumulated": [
            cost(vag(accumulated_without_checkpoint), params, microbatches),
            cost(train.accumulated_step, params, microbatches),
        ],
        "quiet scan": [
            cost(jax.grad(scan_loss_without_checkpoint), stacked, batch),
            cost(train.scan_step, stacked, batch),
        ],
        "quiet stacked": [
            cost(vag(stacked_loss_without_checkpoint), stacked, batch),
            cost(train.stacked_step, stacked, batch),
        ],
    }
    json.dump(costs, sys.stdout)


if __name__ == "__main__":
    main()
