"""How the forward pass treats its activations, chosen by name in the config."""

from flax import nnx


def keep(f):
    return f


WRAPPERS = {"keep": keep, "recompute": nnx.remat}
