import jax

cp = jax.checkpoint_policies

# what each checkpointed stack keeps for the backward pass, by the name a config gives
REGISTRY = {
    "lean": cp.nothing_saveable,
    "balanced": cp.dots_with_no_batch_dims_saveable,
    "fast": cp.everything_saveable,
}


def policy(name):
    return REGISTRY[name]
