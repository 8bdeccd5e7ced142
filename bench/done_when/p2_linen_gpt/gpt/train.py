import jax
import jax.numpy as jnp


def loss_fn(params, model, tokens):
    logits = model.apply(params, tokens[:, :-1])
    targets = jax.nn.one_hot(tokens[:, 1:], logits.shape[-1])
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * targets, axis=-1))


def train_step(params, model, tokens, lr=1e-3):
    loss, grads = jax.value_and_grad(loss_fn)(params, model, tokens)
    return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads), loss
