import jax
import jax.numpy as jnp
from flax import nnx
from regress.model import CONFIG, Denoiser, Regressor, denoise, regress, train_step


def batch():
    x = jax.random.normal(jax.random.key(1), (CONFIG["batch"], CONFIG["width"]))
    return x, x + 0.1 * jax.random.normal(jax.random.key(2), x.shape)


def test_a_denoiser_step():
    clean, noisy = batch()
    model = Denoiser(CONFIG["width"], CONFIG["depth"], nnx.Rngs(0))
    assert jnp.isfinite(train_step(model, noisy, clean, CONFIG["lr"], denoise))


def test_a_regressor_step():
    x, _ = batch()
    model = Regressor(CONFIG["width"], CONFIG["depth"], nnx.Rngs(0))
    assert jnp.isfinite(train_step(model, x, jnp.sum(x, axis=1, keepdims=True), CONFIG["lr"], regress))
