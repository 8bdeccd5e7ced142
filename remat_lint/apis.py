"""What remat-lint knows about the JAX checkpointing APIs (measured on jax 0.10.2, flax 0.12.8,
dm-haiku 0.0.17, equinox 0.13.8; tests/jax_claims/test_apis.py introspects the installed packages and fails
when this drifts from them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Family = Literal["jax", "flax", "nnx", "haiku", "equinox"]


@dataclass(frozen=True)
class RematApi:
    qname: str  # canonical dotted name
    family: Family
    target_param: str  # name of the checkpointed callable's parameter
    keywords: frozenset[str]  # every keyword the API accepts (target excluded)
    positional: tuple[str, ...]  # parameters that may also be passed positionally after the target
    decorator_factory: bool  # True when ``@api(policy=...)`` (keywords only) is valid
    self_counts_in_static_argnums: bool = False  # Flax linen counts ``self`` as argument 0

    @property
    def display(self) -> str:
        return DISPLAY_NAMES.get(self.qname, self.qname)


_JAX_CHECKPOINT = frozenset({"prevent_cse", "policy", "static_argnums", "static_argnames", "concrete"})
_JAX_REMAT = frozenset({"prevent_cse", "policy", "static_argnums", "concrete"})
_FLAX_LINEN = (
    "variables",
    "rngs",
    "concrete",
    "prevent_cse",
    "static_argnums",
    "policy",
    "methods",
)

_APIS = [
    RematApi("jax.checkpoint", "jax", "fun", _JAX_CHECKPOINT, (), False),
    RematApi("jax.remat", "jax", "fun", _JAX_REMAT, (), False),
    RematApi("haiku.remat", "haiku", "fun", _JAX_REMAT, (), False),
    RematApi("flax.linen.remat", "flax", "target", frozenset(_FLAX_LINEN), _FLAX_LINEN, False, True),
    RematApi("flax.linen.partitioning.remat", "flax", "target", frozenset(_FLAX_LINEN), _FLAX_LINEN, False),
    RematApi(
        "flax.nnx.remat",
        "nnx",
        "f",
        frozenset({"prevent_cse", "static_argnums", "policy", "graph", "graph_updates"}),
        (),
        True,
    ),
    RematApi("equinox.filter_checkpoint", "equinox", "fun", frozenset({"prevent_cse", "policy"}), (), True),
]

# Other spellings that are the same object (or a re-export) as a canonical API.
_ALIASES = {
    "flax.linen.checkpoint": "flax.linen.remat",
    "flax.linen.transforms.remat": "flax.linen.remat",
    "flax.linen.transforms.checkpoint": "flax.linen.remat",
    "flax.experimental.nnx.remat": "flax.nnx.remat",
    "flax.nnx.transforms.autodiff.remat": "flax.nnx.remat",
}

REMAT_APIS: dict[str, RematApi] = {api.qname: api for api in _APIS}
REMAT_APIS.update({alias: REMAT_APIS[canonical] for alias, canonical in _ALIASES.items()})

DISPLAY_NAMES = {
    "jax.checkpoint": "jax.checkpoint",
    "jax.remat": "jax.remat",
    "haiku.remat": "hk.remat",
    "flax.linen.remat": "nn.remat",
    "flax.linen.partitioning.remat": "nn_partitioning.remat",
    "flax.nnx.remat": "nnx.remat",
    "equinox.filter_checkpoint": "eqx.filter_checkpoint",
}

# The function's ``__name__``, as Python's TypeErrors spell it (``checkpoint() got an unexpected ...``).
FUNCTION_NAMES = {
    "jax.checkpoint": "checkpoint",
    "jax.remat": "remat",
    "haiku.remat": "remat",
    "flax.linen.remat": "checkpoint",
    "flax.linen.partitioning.remat": "remat",
    "flax.nnx.remat": "remat",
    "equinox.filter_checkpoint": "filter_checkpoint",
}

PARTIAL = frozenset({"functools.partial"})


def raises_when(api: RematApi) -> str:
    """When a bad argument to ``api`` raises (measured): ``hk.remat`` accepts anything and calls
    ``jax.remat`` afresh each time its result is called; the others check when they wrap."""
    if api.family == "haiku":
        return "when the checkpointed function is called (at `init`/`apply`)"
    return "when it wraps the function"

# Removed APIs (REM005): JAX 0.10.0 dropped these module attributes.
REMOVED_APIS = {
    "jax.ad_checkpoint.checkpoint": "jax.checkpoint",
    "jax.ad_checkpoint.remat": "jax.remat",
}

# --- policies ------------------------------------------------------------------------------------

POLICY_NAMESPACES = ("jax.checkpoint_policies", "jax.ad_checkpoint.checkpoint_policies")


@dataclass(frozen=True)
class PolicyInfo:
    name: str
    kind: Literal["plain", "factory"]
    # For factories: how many positional arguments the call takes (None: any number, *names).
    min_args: int = 0
    max_args: int | None = 0
    keyword_only: tuple[str, ...] = ()
    takes_names: bool = False  # factories whose varargs are checkpoint names
    offloads: bool = False  # returns Offloadable values (not a bool policy)
    alias_of: str | None = None


_POLICIES = [
    PolicyInfo("everything_saveable", "plain"),
    PolicyInfo("nothing_saveable", "plain"),
    PolicyInfo("dots_saveable", "plain"),
    PolicyInfo("checkpoint_dots", "plain", alias_of="dots_saveable"),
    PolicyInfo("dots_with_no_batch_dims_saveable", "plain"),
    PolicyInfo("checkpoint_dots_with_no_batch_dims", "plain", alias_of="dots_with_no_batch_dims_saveable"),
    PolicyInfo("save_only_these_names", "factory", 0, None, takes_names=True),
    PolicyInfo("save_any_names_but_these", "factory", 0, None, takes_names=True),
    PolicyInfo("save_anything_except_these_names", "factory", 0, None, takes_names=True),
    PolicyInfo(
        "save_and_offload_only_these_names",
        "factory",
        0,
        0,
        keyword_only=("names_which_can_be_saved", "names_which_can_be_offloaded", "offload_src", "offload_dst"),
        offloads=True,
    ),
    PolicyInfo("save_from_both_policies", "factory", 2, 2),
    PolicyInfo("offload_dot_with_no_batch_dims", "factory", 2, 2, offloads=True),
]

POLICIES: dict[str, PolicyInfo] = {p.name: p for p in _POLICIES}

CHECKPOINT_NAME = frozenset({"jax.ad_checkpoint.checkpoint_name"})

# Flax linen Module classes (REM004, REM009): the base class and every Module subclass that
# ``flax.linen`` exports.
LINEN_MODULE_CLASSES = frozenset(
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
)


def remat_api(qname: str | None) -> RematApi | None:
    return REMAT_APIS.get(qname) if qname else None


def policy_info(qname: str | None) -> PolicyInfo | None:
    """The policy a qualified name refers to (``jax.checkpoint_policies.dots_saveable``)."""
    if not qname:
        return None
    namespace, _, name = qname.rpartition(".")
    return POLICIES.get(name) if namespace in POLICY_NAMESPACES else None


def is_policy_namespace(qname: str | None) -> bool:
    return qname in POLICY_NAMESPACES


# Differentiation: what a transform computes (``grad`` includes jacrev, ``value_and_grad`` includes
# vjp: they also run the forward for its value) and the parameter that takes the function.
DiffKind = Literal["grad", "value_and_grad", "forward", "hessian"]


@dataclass(frozen=True)
class DiffApi:
    qname: str
    kind: DiffKind
    target_param: str  # the differentiated function's parameter (always the first)

    @property
    def reverse(self) -> bool:
        return self.kind in ("grad", "value_and_grad", "hessian")


_APIS = [
    DiffApi("jax.grad", "grad", "fun"),
    DiffApi("jax.jacrev", "grad", "fun"),
    DiffApi("jax.value_and_grad", "value_and_grad", "fun"),
    DiffApi("jax.vjp", "value_and_grad", "fun"),
    DiffApi("jax.jacfwd", "forward", "fun"),
    DiffApi("jax.hessian", "hessian", "fun"),
    DiffApi("flax.nnx.grad", "grad", "f"),
    DiffApi("flax.nnx.value_and_grad", "value_and_grad", "f"),
    DiffApi("flax.nnx.vjp", "value_and_grad", "f"),
    DiffApi("flax.linen.grad", "grad", "fn"),
    DiffApi("flax.linen.value_and_grad", "value_and_grad", "fn"),
    DiffApi("flax.linen.vjp", "value_and_grad", "fn"),
    DiffApi("haiku.grad", "grad", "fun"),
    DiffApi("haiku.value_and_grad", "value_and_grad", "fun"),
    DiffApi("equinox.filter_grad", "grad", "fun"),
    DiffApi("equinox.filter_jacrev", "grad", "fun"),
    DiffApi("equinox.filter_value_and_grad", "value_and_grad", "fun"),
    DiffApi("equinox.filter_vjp", "value_and_grad", "fun"),
    DiffApi("equinox.filter_jacfwd", "forward", "fun"),
    DiffApi("equinox.filter_hessian", "hessian", "fun"),
]
DIFF_APIS: dict[str, DiffApi] = {api.qname: api for api in _APIS}
