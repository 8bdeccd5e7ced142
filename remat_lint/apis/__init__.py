"""What remat-lint knows about the JAX frameworks' APIs: the one place that spells their qualified
names. Each framework has its module of tables (``jax``, ``linen``, ``nnx``, ``haiku``, ``equinox``;
measured on jax 0.10.2, flax 0.12.8, dm-haiku 0.0.17, equinox 0.13.8; tests/test_apis.py checks the
remat APIs and policies against the installed packages); this module joins them into the
tables the analyses, rules and prefilter read. Adding an API is a row in its framework's module.

libcst-free and cheap to import: the prefilter (all a warm run needs) reads it.
"""

from __future__ import annotations

from remat_lint.apis import equinox, haiku, jax, linen, nnx
from remat_lint.apis.jax import CHECKPOINT_NAME, POLICIES, POLICY_NAMESPACES, REMOVED_APIS
from remat_lint.apis.linen import MODULE_CLASSES as LINEN_MODULE_CLASSES
from remat_lint.apis.records import BodyParam, DiffApi, DiffKind, Family, FlagLayer, PolicyInfo, RematApi

__all__ = [
    "CHECKPOINT_NAME", "DIFF_APIS", "DISPLAY_NAMES", "FLAG_LAYERS", "FUNCTION_NAMES", "LINEN_MODULE_CLASSES", "LOOP_APIS",
    "PARTIAL", "POLICIES", "POLICY_NAMESPACES", "REMAT_APIS", "REMOVED_APIS", "SAME_FUNCTION", "SCANS", "VJPS", "VMAP_APIS",
    "BodyParam", "DiffApi", "DiffKind", "Family", "FlagLayer", "PolicyInfo", "RematApi",
    "is_policy_namespace", "policy_info", "raises_when", "remat_api",
]  # fmt: skip

REMAT_APIS: dict[str, RematApi] = {
    api.qname: api
    for api in (*jax.REMAT_APIS, *haiku.REMAT_APIS, *linen.REMAT_APIS, *nnx.REMAT_APIS, *equinox.REMAT_APIS)
}
REMAT_APIS.update(
    {alias: REMAT_APIS[canonical] for alias, canonical in {**linen.REMAT_ALIASES, **nnx.REMAT_ALIASES}.items()}
)

DISPLAY_NAMES = {api.qname: api.display for api in REMAT_APIS.values()}
FUNCTION_NAMES = {api.qname: api.function_name for api in REMAT_APIS.values()}

PARTIAL = frozenset({"functools.partial"})
# Wrappers that return a callable computing the same function: ``jax.jit(jax.checkpoint(loss))``.
SAME_FUNCTION = PARTIAL | {jax.JIT, equinox.FILTER_JIT, nnx.JIT}

DIFF_APIS: dict[str, DiffApi] = {
    api.qname: api for api in (*jax.DIFF_APIS, *nnx.DIFF_APIS, *linen.DIFF_APIS, *haiku.DIFF_APIS, *equinox.DIFF_APIS)
}
# Differentiation APIs that return the pullback.
VJPS = frozenset({jax.VJP, nnx.VJP, linen.VJP, equinox.FILTER_VJP})

# Loops and maps: qualified name -> where the body (the mapped function) is passed.
LOOP_APIS: dict[str, BodyParam] = {**jax.LOOP_APIS, **linen.LOOP_APIS, **nnx.LOOP_APIS, **haiku.LOOP_APIS}
# Scans over a sequence given as ``xs`` (or Flax's lifted scan): where "over layers" applies.
SCANS = jax.SCANS | linen.SCANS | nnx.SCANS | haiku.SCANS
VMAP_APIS: dict[str, BodyParam] = {
    **jax.VMAP_APIS, **linen.VMAP_APIS, **nnx.VMAP_APIS, **haiku.VMAP_APIS, **equinox.VMAP_APIS,
}  # fmt: skip

# Layers that test a mode flag in Python: qualified name -> how.
FLAG_LAYERS: dict[str, FlagLayer] = {
    **linen.FLAG_LAYERS, **nnx.FLAG_LAYERS, **equinox.FLAG_LAYERS, **haiku.FLAG_LAYERS,
}  # fmt: skip


def raises_when(api: RematApi) -> str:
    """When a bad argument to ``api`` raises (measured): ``hk.remat`` accepts anything and calls
    ``jax.remat`` afresh each time its result is called; the others check when they wrap."""
    if api.family == "haiku":
        return "when the checkpointed function is called (at `init`/`apply`)"
    return "when it wraps the function"


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
