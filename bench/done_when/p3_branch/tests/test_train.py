import jax
import jax.numpy as jnp
from deepnet.net import init, loss


def test_a_training_step():
    params = init(jax.random.key(0), 64)
    x = jax.random.normal(jax.random.key(1), (32, 64))
    value, grads = jax.value_and_grad(loss)(params, x, jnp.roll(x, 1, axis=1))
    assert jnp.isfinite(value) and len(grads) == 8
