import jax
import jax.numpy as jnp
from stack.model import CONFIG, init, loss


def test_a_training_step():
    params = init(jax.random.key(0), CONFIG["width"], CONFIG["depth"])
    x = jax.random.normal(jax.random.key(1), (CONFIG["batch"], CONFIG["width"]))
    value, grads = jax.value_and_grad(loss)(params, x)
    new = jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads)
    assert jnp.isfinite(value) and jnp.isfinite(loss(new, x))
