"""Optax's APIs the analyses resolve."""

from __future__ import annotations

PREFIX = "optax."  # any optax call (an optimizer step updates the parameters)
# Losses that cost little beside a layer (analysis/last_stage.py): these, and ``optax.losses``.
CHEAP_LOSSES = frozenset(
    {
        "optax.softmax_cross_entropy",
        "optax.softmax_cross_entropy_with_integer_labels",
        "optax.sigmoid_binary_cross_entropy",
        "optax.l2_loss",
        "optax.squared_error",
        "optax.huber_loss",
    }
)
LOSSES_PREFIX = "optax.losses."
