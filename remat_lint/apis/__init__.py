"""What remat-lint knows about the JAX frameworks' APIs: the one place that spells their qualified
names. Each framework has its module of tables (``jax``, ``linen``, ``nnx``, ``haiku``, ``equinox``;
measured on jax 0.10.2, flax 0.12.8, dm-haiku 0.0.17, equinox 0.13.8; tests/jax_claims/test_apis.py checks the
remat APIs and policies against the installed packages); this module joins them into the
tables the analyses, rules and prefilter read. Adding an API is a row in its framework's module;
adding a framework is a module listed in ``FRAMEWORKS``.

libcst-free and cheap to import: the prefilter (all a warm run needs) reads it.
"""

from __future__ import annotations

from typing import Any

from remat_lint.apis import equinox, haiku, jax, linen, nnx
from remat_lint.apis.jax import CHECKPOINT_NAME, POLICIES, POLICY_NAMESPACES, REMOVED_APIS
from remat_lint.apis.linen import MODULE_CLASSES as LINEN_MODULE_CLASSES
from remat_lint.apis.records import BodyParam, DiffApi, DiffKind, Family, FlagLayer, PolicyInfo, RematApi

__all__ = [
    "ARRAY_VMAPS", "CHECKPOINT_NAME", "DIFF_APIS", "DISPLAY_NAMES", "FLAG_LAYERS", "FRAMEWORKS", "FUNCTION_NAMES", "LINEAR_LAYERS",
    "LINEN_MODULE_CLASSES", "LOOP_APIS", "MODULE_FAMILIES", "PARTIAL", "POLICIES", "POLICY_NAMESPACES", "REMAT_APIS", "REMOVED_APIS",
    "SAME_BEHAVIOUR", "SAME_FUNCTION", "SCANS", "VJPS", "VMAP_APIS",
    "BodyParam", "DiffApi", "DiffKind", "Family", "FlagLayer", "PolicyInfo", "RematApi",
    "is_policy_namespace", "policy_info", "raises_when", "remat_api",
]  # fmt: skip

# The framework modules whose tables are joined here (a table a framework lacks is left out;
# ``flax`` and ``optax`` only hold names that analyses import directly).
FRAMEWORKS = (jax, haiku, linen, nnx, equinox)


def _rows(table: str) -> list[Any]:
    return [row for framework in FRAMEWORKS for row in getattr(framework, table, ())]


def _merged(table: str) -> dict[str, Any]:
    return {key: value for framework in FRAMEWORKS for key, value in getattr(framework, table, {}).items()}


REMAT_APIS: dict[str, RematApi] = {api.qname: api for api in _rows("REMAT_APIS")}
REMAT_APIS.update({alias: REMAT_APIS[canonical] for alias, canonical in _merged("REMAT_ALIASES").items()})

DISPLAY_NAMES = {api.qname: api.display for api in REMAT_APIS.values()}
FUNCTION_NAMES = {api.qname: api.function_name for api in REMAT_APIS.values()}

PARTIAL = frozenset({"functools.partial"})
# Wrappers whose result behaves as their argument does: ``jax.named_call(jax.checkpoint(loss))``.
SAME_BEHAVIOUR = frozenset(_rows("SAME_BEHAVIOUR"))
# Wrappers that return a callable computing the same function: ``jax.jit(jax.checkpoint(loss))``.
SAME_FUNCTION = PARTIAL.union(_rows("JITS"), SAME_BEHAVIOUR)

DIFF_APIS: dict[str, DiffApi] = {api.qname: api for api in _rows("DIFF_APIS")}
VJPS = frozenset(api.qname for api in DIFF_APIS.values() if api.pullback)

# Loops and maps: qualified name -> where the body (the mapped function) is passed.
LOOP_APIS: dict[str, BodyParam] = _merged("LOOP_APIS")
# Scans over a sequence given as ``xs`` (or Flax's lifted scan): where "over layers" applies.
SCANS = frozenset(_rows("SCANS"))
VMAP_APIS: dict[str, BodyParam] = _merged("VMAP_APIS")
# Maps over arrays: qualified name -> the positional slot (None: keyword only) and keyword of ``in_axes``.
ARRAY_VMAPS: dict[str, tuple[int | None, str]] = _merged("ARRAY_VMAPS")

# A single linear layer given to a remat that takes instances (``hk.remat(hk.Linear(4))``; REM106).
LINEAR_LAYERS = frozenset(_rows("LINEAR_LAYERS"))

# Layers that test a mode flag in Python: qualified name -> how.
FLAG_LAYERS: dict[str, FlagLayer] = _merged("FLAG_LAYERS")


def _module_classes(framework: Any) -> frozenset[str]:
    """The Module base class of a framework and the layer classes its tables name."""
    tables = ("MODULE_CLASSES", "LINEAR_LAYERS", "LINEAR_CLASSES", "PARAM_LAYERS", "FLAG_LAYERS", "STATEFUL_LAYERS")
    names = {getattr(framework, "MODULE", None), *(n for t in tables for n in getattr(framework, t, ()))}
    return frozenset(n for n in names if n is not None)


# Module classes by qualified name -> their framework: a class deriving from one is a Module of it.
_MODULE_FRAMEWORKS: tuple[tuple[Family, Any], ...] = (
    ("flax", linen),
    ("nnx", nnx),
    ("haiku", haiku),
    ("equinox", equinox),
)
MODULE_FAMILIES: dict[str, Family] = {
    qname: family for family, framework in _MODULE_FRAMEWORKS for qname in _module_classes(framework)
}


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
