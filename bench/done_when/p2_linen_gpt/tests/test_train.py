import jax
import jax.numpy as jnp
import pytest
from gpt.model import build
from gpt.train import train_step

BASE = {"vocab": 96, "width": 64, "depth": 2, "heads": 4}


@pytest.mark.parametrize(
    "memory",
    [{"model_memory": "recompute", "block_memory": "keep"}, {"model_memory": "keep", "block_memory": "recompute"}],
    ids=["whole-model", "per-block"],
)
def test_a_training_step(memory):
    model = build({**BASE, **memory})
    tokens = jax.random.randint(jax.random.key(0), (8, 33), 0, BASE["vocab"])
    params = model.init(jax.random.key(1), tokens[:, :-1])
    params, loss = train_step(params, model, tokens)
    assert jnp.isfinite(loss)
