import jax
import jax.numpy as jnp
from names.model import init, loss


def test_a_training_step():
    params = init(jax.random.key(0), 32, 2)
    x = jax.random.normal(jax.random.key(1), (16, 32))
    value, grads = jax.value_and_grad(loss)(params, x)
    assert jnp.isfinite(value) and len(grads) == 2
