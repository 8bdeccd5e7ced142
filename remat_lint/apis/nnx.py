"""Flax NNX's APIs (measured on flax 0.12.8; tests/jax_claims/test_apis.py checks the remat rows
against the installed package)."""

from __future__ import annotations

from remat_lint.apis.records import BodyParam, DiffApi, FlagLayer, RematApi

REMAT = "flax.nnx.remat"
JITS = frozenset({"flax.nnx.jit"})

REMAT_APIS = [
    RematApi(
        REMAT,
        "nnx",
        "f",
        frozenset({"prevent_cse", "static_argnums", "policy", "graph", "graph_updates"}),
        (),
        True,
        "nnx.remat",
        "remat",
    ),
]
REMAT_ALIASES = {
    "flax.experimental.nnx.remat": REMAT,
    "flax.nnx.transforms.autodiff.remat": REMAT,
}

DIFF_APIS = [
    DiffApi("flax.nnx.grad", "grad", "f"),
    DiffApi("flax.nnx.value_and_grad", "value_and_grad", "f"),
    DiffApi("flax.nnx.vjp", "value_and_grad", "f", pullback=True),
]

LOOP_APIS: dict[str, BodyParam] = {
    "flax.nnx.scan": (0, "f"),
    "flax.nnx.fori_loop": (2, "body_fun"),
    "flax.nnx.while_loop": (1, "body_fun"),
}
SCANS = frozenset({"flax.nnx.scan"})
LINEAR_LAYERS = frozenset({"flax.nnx.Linear"})  # a single linear layer (REM106), remat given an instance
VMAP_APIS: dict[str, BodyParam] = {"flax.nnx.vmap": (0, "f")}
ARRAY_VMAPS: dict[str, tuple[int | None, str]] = {"flax.nnx.vmap": (None, "in_axes")}  # see jax.ARRAY_VMAPS

# Layers that test a mode flag in Python (analysis/layers.py).
FLAG_LAYERS: dict[str, FlagLayer] = {
    **dict.fromkeys(
        ("flax.nnx.Dropout", "flax.nnx.nn.stochastic.Dropout"), FlagLayer("deterministic", None, "rate", 0)
    ),
    **dict.fromkeys(
        ("flax.nnx.BatchNorm", "flax.nnx.nn.normalization.BatchNorm"), FlagLayer("use_running_average", 1, None, None)
    ),
    **dict.fromkeys(
        ("flax.nnx.MultiHeadAttention", "flax.nnx.nn.attention.MultiHeadAttention"),
        FlagLayer("deterministic", None, "dropout_rate", None),
    ),
}

MODULE_CLASSES = frozenset({"flax.nnx.Module", "flax.nnx.module.Module", "flax.experimental.nnx.Module"})
# Layers that write their own state when called in training mode, and what they write (the
# exception names the variable type; REM019).
STATEFUL_LAYERS = {
    "flax.nnx.BatchNorm": "BatchStat",
    "flax.nnx.nn.normalization.BatchNorm": "BatchStat",
    "flax.nnx.Dropout": "RngCount",
    "flax.nnx.nn.stochastic.Dropout": "RngCount",
}
