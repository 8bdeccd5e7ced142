"""Flax linen's APIs (measured on flax 0.12.8; tests/jax_claims/test_apis.py checks the remat rows
against the installed package)."""

from __future__ import annotations

from remat_lint.apis.records import BodyParam, DiffApi, FlagLayer, ModuleVmap, RematApi

REMAT = "flax.linen.remat"
PARTITIONING_REMAT = "flax.linen.partitioning.remat"
REMAT_SCAN = "flax.linen.remat_scan"
COMPACT = "flax.linen.compact"
APPLY = "apply"  # the Module method that runs ``__call__`` (of the remat-lifted class, for ``nn.remat(GPT)()``)
APPLY_METHOD = "method"  # ``apply``'s keyword that runs another method instead
# Method decorators that keep the method's signature (a plain method for the analyses).
COMPACT_NAMES = frozenset({COMPACT, "flax.linen.module.compact"})
PLAIN_METHOD_DECORATORS = frozenset({COMPACT, "flax.linen.nowrap"})

_REMAT_PARAMS = ("variables", "rngs", "concrete", "prevent_cse", "static_argnums", "policy", "methods")

REMAT_APIS = [
    RematApi(REMAT, "flax", "target", frozenset(_REMAT_PARAMS), _REMAT_PARAMS, False, "nn.remat", "checkpoint", True),
    RematApi(
        PARTITIONING_REMAT,
        "flax",
        "target",
        frozenset(_REMAT_PARAMS),
        _REMAT_PARAMS,
        False,
        "nn_partitioning.remat",
        "remat",
    ),
]
# Other spellings of the same object (or a re-export).
REMAT_ALIASES = {
    "flax.linen.checkpoint": REMAT,
    "flax.linen.transforms.remat": REMAT,
    "flax.linen.transforms.checkpoint": REMAT,
}

# Flax linen Module classes (REM004, REM009): the base class and every Module subclass that
# ``flax.linen`` exports.
MODULE_CLASSES = frozenset(
    {"flax.linen.module.Module"}
    | {
        f"flax.linen.{name}"
        for name in (
            "Module", "BatchNorm", "Bidirectional", "Conv", "ConvLSTMCell", "ConvLocal", "ConvTranspose",
            "Dense", "DenseGeneral", "Dropout", "Einsum", "Embed", "Fp8DirectDotGeneralOp",
            "Fp8DotGeneral", "Fp8DotGeneralOp", "Fp8Einsum", "GRUCell", "GroupNorm", "InstanceNorm",
            "LSTMCell", "LayerNorm", "MGUCell", "MultiHeadAttention", "MultiHeadDotProductAttention",
            "NANOOFp8DotGeneralOp", "OptimizedLSTMCell", "PReLU", "RMSNorm", "RNN", "RNNCellBase",
            "SelfAttention", "Sequential", "SimpleCell", "SpectralNorm", "WeightNorm",
        )
    }
)  # fmt: skip

DIFF_APIS = [
    DiffApi("flax.linen.grad", "grad", "fn"),
    DiffApi("flax.linen.value_and_grad", "value_and_grad", "fn"),
    DiffApi("flax.linen.vjp", "value_and_grad", "fn", pullback=True),
]

LOOP_APIS: dict[str, BodyParam] = {
    "flax.linen.scan": (0, "target"),
    "flax.linen.transforms.scan": (0, "target"),
    REMAT_SCAN: (0, "target"),
    "flax.linen.while_loop": (1, "body_fn"),
}
SCANS = frozenset({"flax.linen.scan", "flax.linen.transforms.scan"})  # lifted scans
VMAP_APIS: dict[str, BodyParam] = {"flax.linen.vmap": (0, "target")}
# The lifted vmap maps the variable collections ``variable_axes`` names (``{"params": 0}``: an
# ensemble) besides the arguments (REM108; measured in tests/jax_claims/linen_vmap_residuals.py).
MODULE_VMAPS: dict[str, ModuleVmap] = {"flax.linen.vmap": ModuleVmap((3, "in_axes"), (1, "variable_axes"), "methods")}
PARAMS = "params"  # the collection of a Module's parameters
PARAM_METHOD = "param"  # ``self.param(name, init, *shape)``: a parameter of the Module
# Layers whose call is one matrix product of its input with a kernel parameter, unless one of the
# keywords listed replaces the product (a custom ``dot_general``).
DENSE_LAYERS: dict[str, frozenset[str]] = dict.fromkeys(
    ("flax.linen.Dense", "flax.linen.linear.Dense"), frozenset({"dot_general", "dot_general_cls"})
)

# Layers that test a mode flag in Python (analysis/layers.py).
_DROPOUT = FlagLayer("deterministic", 1, "rate", 0)
_BATCH_NORM = FlagLayer("use_running_average", 1, None, None)
_ATTENTION = FlagLayer("deterministic", None, "dropout_rate", None)
FLAG_LAYERS: dict[str, FlagLayer] = {
    **dict.fromkeys(("flax.linen.Dropout", "flax.linen.stochastic.Dropout"), _DROPOUT),
    **dict.fromkeys(("flax.linen.BatchNorm", "flax.linen.normalization.BatchNorm"), _BATCH_NORM),
    **dict.fromkeys(
        (
            f"flax.linen.{module}{name}"
            for module in ("", "attention.")
            for name in ("MultiHeadDotProductAttention", "MultiHeadAttention", "SelfAttention")
        ),
        _ATTENTION,
    ),
}

# Layers that create parameters when first called (REM015); parameter-free ones (Dropout, pooling)
# and norms that may be built without parameters are left out.
PARAM_LAYERS = frozenset(
    f"flax.linen.{name}"
    for name in (
        "Dense", "DenseGeneral", "Conv", "ConvTranspose", "ConvLocal", "Embed", "Einsum",
        "MultiHeadDotProductAttention", "MultiHeadAttention", "SelfAttention",
    )
)  # fmt: skip
LINEAR_CLASSES = frozenset({"flax.linen.Dense", "flax.linen.DenseGeneral"})  # a single linear layer (REM106)
# Initializer wrappers whose parameters are boxed in ``nn.Partitioned`` (``LogicallyPartitioned`` is
# one; REM018).
PARTITIONING = frozenset(
    {
        "flax.linen.with_partitioning",
        "flax.linen.spmd.with_partitioning",
        "flax.linen.with_logical_partitioning",
        "flax.linen.spmd.with_logical_partitioning",
        "flax.linen.partitioning.with_partitioning",
    }
)
