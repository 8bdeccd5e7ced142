"""JAX's APIs (measured on jax 0.10.2; tests/jax_claims/test_apis.py checks the remat rows
against the installed package)."""

from __future__ import annotations

from remat_lint.apis.records import BodyParam, DiffApi, PolicyInfo, RematApi

PREFIX = "jax."  # every JAX API
CHECKPOINT = "jax.checkpoint"
REMAT = "jax.remat"

_CHECKPOINT_KEYWORDS = frozenset({"prevent_cse", "policy", "static_argnums", "static_argnames", "concrete"})
REMAT_KEYWORDS = frozenset({"prevent_cse", "policy", "static_argnums", "concrete"})  # jax.remat's (and hk.remat's)

REMAT_APIS = [
    RematApi(CHECKPOINT, "jax", "fun", _CHECKPOINT_KEYWORDS, (), False, "jax.checkpoint", "checkpoint"),
    RematApi(REMAT, "jax", "fun", REMAT_KEYWORDS, (), False, "jax.remat", "remat"),
]

# Removed APIs (REM005): JAX 0.10.0 dropped these module attributes.
REMOVED_APIS = {
    "jax.ad_checkpoint.checkpoint": CHECKPOINT,
    "jax.ad_checkpoint.remat": REMAT,
}

# --- policies ------------------------------------------------------------------------------------

POLICY_NAMESPACE = "jax.checkpoint_policies"  # the public spelling
POLICY_NAMESPACES = (POLICY_NAMESPACE, "jax.ad_checkpoint.checkpoint_policies")

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
# Policies that save (or offload) only dots without batch dimensions: under ``vmap`` of every
# operand, none (REM108).
NO_BATCH_DIMS_POLICIES = frozenset(
    {"dots_with_no_batch_dims_saveable", "checkpoint_dots_with_no_batch_dims", "offload_dot_with_no_batch_dims"}
)

CHECKPOINT_NAME = frozenset({"jax.ad_checkpoint.checkpoint_name"})

# --- transforms ----------------------------------------------------------------------------------

JITS = frozenset({"jax.jit"})  # return a callable computing the same function
# Return their argument's behaviour unchanged (``named_call`` only names it in the jaxpr).
SAME_BEHAVIOUR = frozenset({"jax.named_call"})

DIFF_APIS = [
    DiffApi("jax.grad", "grad", "fun"),
    DiffApi("jax.jacrev", "grad", "fun"),
    DiffApi("jax.value_and_grad", "value_and_grad", "fun"),
    DiffApi("jax.vjp", "value_and_grad", "fun", pullback=True),
    DiffApi("jax.jacfwd", "forward", "fun"),
    DiffApi("jax.hessian", "hessian", "fun"),
]

LOOP_APIS: dict[str, BodyParam] = {
    "jax.lax.scan": (0, "f"),
    "jax.lax.map": (0, "f"),
    "jax.lax.associative_scan": (0, "fn"),
    "jax.lax.fori_loop": (2, "body_fun"),
    "jax.lax.while_loop": (1, "body_fun"),
}
SCANS = frozenset({"jax.lax.scan"})  # scans over a sequence given as ``xs``
VMAP_APIS: dict[str, BodyParam] = {"jax.vmap": (0, "fun")}
# Maps of a function over arrays, with the positional slot (None: keyword only) and the keyword of
# their ``in_axes``: a no-batch-dims policy inside them was measured the same (REM108).
ARRAY_VMAPS: dict[str, tuple[int | None, str]] = {"jax.vmap": (1, "in_axes")}

# --- other functions the analyses resolve --------------------------------------------------------

# Functions JAX calls at run time, not at trace time: their bodies are not the checkpoint's.
CALLBACKS = frozenset(
    {
        "jax.debug.callback",
        "jax.pure_callback",
        "jax.experimental.io_callback",
        "jax.experimental.pure_callback",
        "jax.experimental.host_callback.id_tap",
        "jax.experimental.host_callback.call",
    }
)
NUMPY_REDUCTIONS = frozenset({"jax.numpy.sum", "jax.numpy.mean"})  # what a loss ends with

# Calls that cost little beside a layer (analysis/last_stage.py): these, most of ``jax.numpy`` and
# ``jax.nn`` (by prefix, with exceptions there).
CHEAP_CALLS = frozenset(
    {
        "jax.lax.stop_gradient", "jax.lax.pmean", "jax.lax.psum", "jax.lax.rsqrt", "jax.lax.square",
        "jax.scipy.special.logsumexp", "jax.numpy.linalg.norm",
        "jax.tree_util.tree_leaves", "jax.tree.leaves",  # an L2 penalty over the parameters
    }
)  # fmt: skip
NUMPY_PREFIX = "jax.numpy."
NN_PREFIX = "jax.nn."
# Host callbacks inside a checkpoint (REM203): printed/called again when the backward recomputes,
# and an ``io_callback`` refuses to run there.
DEBUG_CALLBACKS = frozenset({"jax.debug.print", "jax.debug.callback"})
IO_CALLBACKS = frozenset({"jax.experimental.io_callback"})
MATMULS = frozenset({"jax.numpy.dot", "jax.numpy.matmul", "jax.lax.dot"})  # a single linear layer (REM106)
# Products that apply weights to an input (REM301: a scan body applying its slice to its carry).
CONTRACTIONS = MATMULS | frozenset({"jax.numpy.einsum", "jax.numpy.tensordot", "jax.lax.dot_general"})
EINSUMS = frozenset({"jax.numpy.einsum"})
# Elementwise functions: under ``vmap`` their result is batched when an argument is (REM108).
ELEMENTWISE = frozenset(
    {
        "jax.numpy.tanh", "jax.numpy.exp", "jax.numpy.log", "jax.numpy.sin", "jax.numpy.cos",
        "jax.numpy.sqrt", "jax.numpy.abs", "jax.numpy.maximum", "jax.numpy.minimum", "jax.numpy.square",
        "jax.nn.relu", "jax.nn.gelu", "jax.nn.sigmoid", "jax.nn.silu", "jax.nn.swish", "jax.nn.softplus",
        "jax.nn.softmax", "jax.nn.tanh", "jax.lax.tanh", "jax.lax.exp",
    }
)  # fmt: skip  # with a subscripts string and two operands: one too (REM106)
