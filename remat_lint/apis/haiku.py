"""Haiku's APIs (measured on dm-haiku 0.0.17; tests/jax_claims/test_apis.py checks the remat rows
against the installed package)."""

from __future__ import annotations

from remat_lint.apis.jax import REMAT_KEYWORDS
from remat_lint.apis.records import BodyParam, DiffApi, FlagLayer, RematApi

REMAT = "haiku.remat"
# ``hk.transform(f)``: the function whose ``init``/``apply`` run ``f``; ``without_apply_rng`` wraps them.
TRANSFORMS = frozenset({"haiku.transform", "haiku.transform_with_state"})
WITHOUT_APPLY_RNG = "haiku.without_apply_rng"

REMAT_APIS = [RematApi(REMAT, "haiku", "fun", REMAT_KEYWORDS, (), False, "hk.remat", "remat")]

DIFF_APIS = [
    DiffApi("haiku.grad", "grad", "fun"),
    DiffApi("haiku.value_and_grad", "value_and_grad", "fun"),
]

LOOP_APIS: dict[str, BodyParam] = {
    "haiku.scan": (0, "f"),
    "haiku.fori_loop": (2, "body_fun"),
    "haiku.while_loop": (1, "body_fun"),
    "haiku.map": (0, "f"),
}
SCANS = frozenset({"haiku.scan"})
VMAP_APIS: dict[str, BodyParam] = {"haiku.vmap": (0, "fun")}

# Layers that test a mode flag in Python (analysis/layers.py).
FLAG_LAYERS: dict[str, FlagLayer] = {
    **dict.fromkeys(("haiku.BatchNorm", "haiku._src.batch_norm.BatchNorm"), FlagLayer("is_training", 1, None, None)),
}

MODULE = "haiku.Module"
LINEAR_LAYERS = frozenset({"haiku.Linear"})  # a single linear layer (REM106), remat given an instance
# Layers that create parameters when first called (REM015), and the calls that create them.
PARAM_LAYERS = frozenset(
    f"haiku.{name}"
    for name in (
        "Linear", "Bias", "Embed", "Conv1D", "Conv2D", "Conv3D", "ConvND", "Conv1DTranspose", "Conv2DTranspose",
        "Conv3DTranspose", "ConvNDTranspose", "DepthwiseConv1D", "DepthwiseConv2D", "DepthwiseConv3D",
        "SeparableDepthwiseConv2D", "MultiHeadAttention", "LSTM", "GRU", "VanillaRNN", "nets.MLP",
    )
)  # fmt: skip
PARAM_CALLS = frozenset({"haiku.get_parameter", "haiku.get_state"})
