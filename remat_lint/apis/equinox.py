"""Equinox's APIs (measured on equinox 0.13.8; tests/jax_claims/test_apis.py checks the remat rows
against the installed package)."""

from __future__ import annotations

from remat_lint.apis.records import BodyParam, DiffApi, FlagLayer, RematApi

FILTER_CHECKPOINT = "equinox.filter_checkpoint"
# A dataclass: an instance built without arguments holds its class-body field defaults.
MODULE = "equinox.Module"
LINEAR_LAYERS = frozenset({"equinox.nn.Linear"})  # a single linear layer (REM106), remat given an instance
JITS = frozenset({"equinox.filter_jit"})

REMAT_APIS = [
    RematApi(
        FILTER_CHECKPOINT,
        "equinox",
        "fun",
        frozenset({"prevent_cse", "policy"}),
        (),
        True,
        "eqx.filter_checkpoint",
        "filter_checkpoint",
    ),
]

DIFF_APIS = [
    DiffApi("equinox.filter_grad", "grad", "fun"),
    DiffApi("equinox.filter_jacrev", "grad", "fun"),
    DiffApi("equinox.filter_value_and_grad", "value_and_grad", "fun"),
    DiffApi("equinox.filter_vjp", "value_and_grad", "fun", pullback=True),
    DiffApi("equinox.filter_jacfwd", "forward", "fun"),
    DiffApi("equinox.filter_hessian", "hessian", "fun"),
]

VMAP_APIS: dict[str, BodyParam] = {"equinox.filter_vmap": (0, "fun")}

# Layers that test a mode flag in Python (analysis/layers.py).
FLAG_LAYERS: dict[str, FlagLayer] = {
    **dict.fromkeys(
        ("equinox.nn.BatchNorm", "equinox.nn._batch_norm.BatchNorm"), FlagLayer("inference", None, None, None)
    ),
    **dict.fromkeys(
        ("equinox.nn.Dropout", "equinox.nn._dropout.Dropout"),
        FlagLayer("inference", None, "p", 0, default_rate=0.5, also="deterministic"),
    ),
}
