"""remat-lint: finds misuse of JAX gradient checkpointing (jax.checkpoint / remat)."""

__version__ = "0.1.0"
