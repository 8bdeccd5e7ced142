"""Worker side: import the user's module and turn targets into abstract calls (imports JAX).

A ``Prepared`` target is what evidence and cost analysis run: ``fun(*args, **kwargs)`` where
``args`` are the differentiable inputs and ``kwargs`` the others, all ``jax.ShapeDtypeStruct``
pytrees. ``fun`` returns a float32 scalar (the sum of the target's floating outputs) when
``differentiate`` is true; for a target that differentiates itself (a train step) it is the target
as written and ``differentiate`` is false. The same facts are attributes of ``fun``
(``fun.differentiate``), for code that only receives the callable.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import itertools
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp

from remat_lint.trace.inputs import (
    FLAG_NAMES,
    RNG_NAMES,
    CallSpec,
    TargetSpec,
    jaxtyping_shape,
    map_leaves,
)
from remat_lint.trace.shapes import Shape, format_shape
from remat_lint.trace.worker import fallback
from remat_lint.trace.worker.recorded import Recorded

# Shape hypotheses for a parameter without declared inputs, cheapest first.
SEARCH_SHAPES = ((8,), (8, 8), (4, 8, 8), (2, 4, 8, 8), ())
SEARCH_LIMIT = 16
COTANGENT = "cotangent"  # the input a recorded jax.vjp program is pulled back with (from_recorded)
# Errors that do not depend on the shapes tried: a shape search that meets one has found inputs.
SHAPE_INDEPENDENT = frozenset(
    {"TracerBoolConversionError", "ConcretizationTypeError", "TracerIntegerConversionError", "NotImplementedError"}
)


# Only declared or recorded shapes may refute a finding; jaxtyping sizes named dimensions itself.
SHAPE_ORIGINS = {
    "pyproject": "declared",
    "inline comment": "declared",
    "recorded": "recorded",
    "recorded call": "recorded",
    fallback.SOURCE: "recorded",  # observed in the failed build of a declared target
}


class NoInputs(Exception):
    """No abstract inputs for a target; the message says what to add."""


@dataclass
class Prepared:
    name: str  # for messages: ``loss(f32[8,8], f32[8])``
    fun: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    differentiate: bool
    source: str  # "pyproject", "inline comment", "jaxtyping", "shape search"


def import_module(path: str, root: str) -> ModuleType:
    """Import ``path`` under its dotted name relative to ``root`` (on sys.path, so its own imports work)."""
    if root not in sys.path:
        sys.path.insert(0, root)
    rel = Path(path).resolve().relative_to(Path(root).resolve()).with_suffix("")
    parts = list(rel.parts[:-1]) if rel.name == "__init__" else list(rel.parts)
    name = ".".join(parts) or "__main__target__"
    existing = sys.modules.get(name)
    if existing is not None and Path(getattr(existing, "__file__", "") or "").resolve() == Path(path).resolve():
        return existing
    if len(parts) > 1:
        # Inside a package: import it as Python does, parents first. A package whose __init__
        # re-exports from this module must not find it half-initialised in sys.modules.
        module = importlib.import_module(name)
        if Path(getattr(module, "__file__", "") or "").resolve() == Path(path).resolve():
            return module
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def abstract(value: Any) -> Any:
    """Shapes (also inside lists, tuples and dicts) -> ShapeDtypeStruct; other values unchanged."""
    return map_leaves(lambda v: jax.ShapeDtypeStruct(v.dims, jnp.dtype(v.dtype)) if isinstance(v, Shape) else v, value)


def describe(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    def one(v: Any) -> str:
        if isinstance(v, jax.ShapeDtypeStruct):
            return format_shape(v.dtype.name, v.shape)
        leaves = jax.tree_util.tree_leaves(v)
        containers = (dict, list, tuple)
        if len(leaves) > 3 and (isinstance(v, containers) or all(isinstance(x, jax.ShapeDtypeStruct) for x in leaves)):
            return f"<{len(leaves)} arrays>"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k}: {one(x)}" for k, x in v.items()) + "}"
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(one(x) for x in v) + "]"
        if leaves and all(isinstance(x, jax.ShapeDtypeStruct) for x in leaves):  # a pytree: nnx.State, a dataclass
            return f"{type(v).__name__}({', '.join(one(x) for x in leaves)})"
        shown = repr(v)
        return shown if "\n" not in shown and len(shown) <= 40 else f"<{type(v).__name__}>"

    return ", ".join([*(one(a) for a in args), *(f"{k}={one(v)}" for k, v in kwargs.items())])


def _inexact(value: Any) -> bool:
    leaves = jax.tree_util.tree_leaves(value)
    return bool(leaves) and all(
        isinstance(x, jax.ShapeDtypeStruct) and jnp.issubdtype(x.dtype, jnp.inexact) for x in leaves
    )


def scalar_loss(out: Any) -> Any:
    leaves = [x for x in jax.tree_util.tree_leaves(out) if jnp.issubdtype(jnp.result_type(x), jnp.inexact)]
    if not leaves:
        raise TypeError("the target returns no floating-point output to differentiate")
    return sum(jnp.sum(jnp.real(x)).astype(jnp.float32) for x in leaves)


def prepare(
    name: str,
    call: Callable[..., Any],
    args: list[Any],
    kwargs: dict[str, Any],
    *,
    argnums: tuple[int, ...] | None,
    differentiate: bool,
    source: str,
) -> Prepared:
    """Differentiable inputs become positionals, other abstract inputs keywords, and Python values
    (``train=True``, ``3``) are bound as they are: JAX would trace them otherwise."""
    args = [abstract(a) for a in args]
    kwargs = {k: abstract(v) for k, v in kwargs.items()}
    if argnums is None:
        argnums = tuple(i for i, a in enumerate(args) if _inexact(a))
    differentiate = differentiate and bool(argnums)
    argnums = argnums if differentiate else ()
    shown = f"{name}({describe(tuple(args), kwargs)})"
    static_pos = {i: a for i, a in enumerate(args) if i not in argnums and not _is_abstract(a)}
    static_kw = {k: v for k, v in kwargs.items() if not _is_abstract(v)}
    dynamic = {f"__arg{i}": a for i, a in enumerate(args) if i not in argnums and i not in static_pos}
    dynamic.update({k: v for k, v in kwargs.items() if k not in static_kw})

    def fun(*diff: Any, **kw: Any) -> Any:
        it = iter(diff)
        full = [
            next(it) if i in argnums else static_pos[i] if i in static_pos else kw.pop(f"__arg{i}")
            for i in range(len(args))
        ]
        out = call(*full, **static_kw, **kw)
        return scalar_loss(out) if differentiate else out

    return Prepared(
        shown,
        _tagged(fun, name, differentiate=differentiate),
        tuple(args[i] for i in argnums),
        dynamic,
        differentiate,
        source,
    )


def _is_abstract(value: Any) -> bool:
    leaves = jax.tree_util.tree_leaves(value)
    return bool(leaves) and all(isinstance(x, jax.ShapeDtypeStruct) for x in leaves)


def _tagged(fun: Callable[..., Any], name: str, *, differentiate: bool) -> Callable[..., Any]:
    fun.__name__ = fun.__qualname__ = name  # cost analysis finds ``jax.checkpoint(loss)`` by name
    fun.differentiate = differentiate  # type: ignore[attr-defined]  # read back by prepare(): a flag on the function
    return fun


def _rng_key() -> Any:
    return jax.eval_shape(lambda: jax.random.key(0))


def _resolve(ref: str) -> Any:
    mod_name, attr = ref.split(":")
    obj: Any = importlib.import_module(mod_name) if mod_name not in sys.modules else sys.modules[mod_name]
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def from_spec(spec: TargetSpec, module: ModuleType, differentiates: bool) -> Prepared:
    """A ``[[tool.remat-lint.trace.targets]]`` entry."""
    differentiate = spec.transform != "none" and not (spec.transform == "auto" and differentiates)
    if spec.module is not None:
        return _flax_target(spec, spec.module, differentiate)
    assert spec.function is not None  # parse_targets: a target without a module names a function
    fun = _resolve_in(spec.function, module)
    call = functools.partial(fun, **spec.static) if spec.static else fun
    return prepare(
        spec.function.split(":")[1],
        call,
        spec.args,
        spec.kwargs,
        argnums=spec.argnums,
        differentiate=differentiate,
        source="pyproject",
    )


def _resolve_in(ref: str, module: ModuleType) -> Any:
    mod_name, attr = ref.split(":")
    if module.__name__ == mod_name or module.__name__.endswith("." + mod_name):
        obj: Any = module
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj
    return _resolve(ref)


def _flax_target(spec: TargetSpec, module: str, differentiate: bool) -> Prepared:
    """``module = "pkg.mod:MLP"`` (``spec.module``): abstract ``init`` (no weights allocated), then ``apply``."""
    cls = _resolve(module)
    margs = spec.module_args
    model = cls(**margs) if isinstance(margs, dict) else cls(*(margs or []))
    return _linen_apply(
        module.split(":")[1],
        model,
        spec.init_args or spec.args,
        spec.args or spec.init_args,
        spec.kwargs,
        init_kwargs={},
        static=spec.static,
        rng_names=spec.init_rngs or ["params"],
        argnums=spec.argnums,
        differentiate=differentiate,
        source="pyproject",
    )


def from_module_call(called: fallback.ModuleCalled) -> Prepared:
    """A Flax Module alone, as a failed build constructed and called it (fallback.py), at the shapes
    of that call, differentiated with respect to its parameters: a linen Module's ``init`` and
    ``apply``, an NNX Module merged again from its graph and state."""
    if called.nnx:
        return _nnx_call(called)
    static = {k: v for k, v in called.kwargs.items() if not _is_abstract(v)}
    arrays = {k: v for k, v in called.kwargs.items() if k not in static}
    return _linen_apply(
        called.name,
        called.module,
        called.args,
        called.args,
        arrays,
        init_kwargs=arrays,
        static=static,
        rng_names=called.rngs,
        argnums=None,
        differentiate=True,
        source=fallback.SOURCE,
        method=called.method,
    )


def _nnx_call(called: fallback.ModuleCalled) -> Prepared:
    from flax import nnx

    graphdef, params, rest = called.module

    def call(params: Any, *a: Any, nnx_rest: Any, **kw: Any) -> Any:
        module = nnx.merge(graphdef, params, nnx_rest, copy=True)  # copy: the graph was made in a trace
        return getattr(module, called.method)(*a, **kw)

    return prepare(
        called.label,
        call,
        [params, *called.args],
        {**called.kwargs, "nnx_rest": rest},
        argnums=(0,),
        differentiate=True,
        source=fallback.SOURCE,
    )


def _linen_apply(
    name: str,
    model: Any,
    init_args: list[Any],
    args: list[Any],
    kwargs: dict[str, Any],
    *,
    init_kwargs: dict[str, Any],
    static: dict[str, Any],
    rng_names: list[str],
    argnums: tuple[int, ...] | None,
    differentiate: bool,
    source: str,
    method: str = "__call__",
) -> Prepared:
    """Abstract ``init`` of a linen ``model`` (no weights allocated), then ``apply`` as the target,
    both through ``method``."""
    keys = {rng: jax.random.key(i) for i, rng in enumerate(rng_names)}
    init_kwargs = {**static, **abstract(init_kwargs), "method": method}
    variables = _abstract_init(model, keys, [abstract(a) for a in init_args], init_kwargs)
    apply_rngs = {k: v for k, v in keys.items() if k != "params"}

    def call(variables: Any, *a: Any, **kw: Any) -> Any:
        extra = {"rngs": apply_rngs} if apply_rngs else {}
        return model.apply(variables, *a, **static, **kw, **extra, method=method)

    return prepare(
        name + ("" if method == "__call__" else f".{method}") + ".apply",
        call,
        [variables, *args],
        kwargs,
        argnums=argnums if argnums is not None else (0,),
        differentiate=differentiate,
        source=source,
    )


def _abstract_init(model: Any, keys: dict[str, Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    """``model.init(keys, *args, **kwargs)`` with no weights allocated: the abstract leaves are
    traced, Python values (``deterministic=True``) stay Python values as in the user's call."""
    leaves, tree = jax.tree_util.tree_flatten((args, kwargs))
    traced = [i for i, leaf in enumerate(leaves) if isinstance(leaf, jax.ShapeDtypeStruct)]

    def init(*arrays: Any) -> Any:
        full = list(leaves)
        for i, array in zip(traced, arrays, strict=True):
            full[i] = array
        a, kw = jax.tree_util.tree_unflatten(tree, full)
        return model.init(keys, *a, **kw)

    return jax.eval_shape(init, *[leaves[i] for i in traced])


def from_recorded(rec: Recorded) -> Prepared:
    """A function the project's run differentiated, at the abstract signature it was called with.
    A ``jax.vjp`` program is pulled back with a cotangent of its output's shape, an input of the
    program (``cotangent=f32[128,64]``): the backward pass then runs as the run's pullback did,
    not with the ones XLA may fold into it."""
    fun = rec.fun
    call = (lambda *a, **k: fun(*a, **k)[0]) if rec.has_aux else fun
    kwargs = dict(rec.kwargs)
    if rec.transform == "vjp":
        kwargs[COTANGENT] = jax.eval_shape(call, *rec.args, **rec.kwargs)
        call = _pulled_back(call)
    return prepare(
        rec.name,
        call,
        list(rec.args),
        kwargs,
        argnums=rec.argnums,
        differentiate=True,
        source="recorded call" if rec.transform == "checkpoint call" else "recorded",
    )


def _pulled_back(call: Callable[..., Any]) -> Callable[..., Any]:
    """``call`` as the scalar whose gradient is its vjp with the cotangent given as ``cotangent``."""

    def pulled(*args: Any, cotangent: Any, **kwargs: Any) -> Any:
        out = call(*args, **kwargs)
        pairs = zip(jax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(cotangent), strict=True)
        inexact = [jnp.vdot(o, c).real for o, c in pairs if jnp.issubdtype(o.dtype, jnp.inexact)]
        return sum(inexact, jnp.float32(0))

    return pulled


def from_inline(name: str, spec: CallSpec, module: ModuleType, differentiates: bool) -> Prepared:
    return prepare(
        name,
        getattr(module, name),
        spec.args,
        spec.kwargs,
        argnums=None,
        differentiate=not differentiates,
        source="inline comment",
    )


def searched(
    name: str, params: list[str], module: ModuleType, differentiates: bool, predicted: Callable[[Exception], bool]
) -> Prepared:
    """jaxtyping annotations when every parameter has one, else a small search with eval_shape that
    stops at the first inputs that trace, or that raise an error a finding ``predicted``."""
    fun = getattr(module, name)
    annotated = _from_jaxtyping(fun, params)
    if annotated is not None:
        return prepare(name, fun, annotated, {}, argnums=None, differentiate=not differentiates, source="jaxtyping")
    last: Exception | None = None
    for combo in _combos(params):
        try:
            jax.eval_shape(fun, *combo)
        except Exception as exc:  # the wrong shapes, or a bug the findings predict
            if type(exc).__name__ not in SHAPE_INDEPENDENT and not predicted(exc):
                last = exc
                continue
        return prepare(
            name, fun, list(combo), {}, argnums=None, differentiate=not differentiates, source="shape search"
        )
    raise NoInputs(
        f"no shapes found by search ({type(last).__name__ if last else 'no parameters'}: {_first_line(last)})"
    )


def _from_jaxtyping(fun: Any, params: list[str]) -> list[Any] | None:
    try:
        hints = inspect.get_annotations(inspect.unwrap(fun), eval_str=True)
    except Exception:
        return None
    sizes: dict[str, int] = {}
    shapes = [jaxtyping_shape(hints.get(p), sizes) for p in params]
    return shapes if params and all(s is not None for s in shapes) else None


def _combos(params: list[str]) -> list[tuple[Any, ...]]:
    options = []
    for p in params:
        if p in RNG_NAMES:
            options.append([_rng_key()])
        elif p in FLAG_NAMES:
            options.append([jax.ShapeDtypeStruct((), jnp.bool_)])
        else:
            options.append([jax.ShapeDtypeStruct(s, jnp.float32) for s in SEARCH_SHAPES])

    def rank(x: Any) -> int:
        shape = getattr(x, "shape", None)
        return SEARCH_SHAPES.index(shape) if shape in SEARCH_SHAPES and x.dtype == jnp.float32 else 0

    combos = list(itertools.product(*options))
    combos.sort(key=lambda c: (len({rank(x) for x in c}), sum(rank(x) for x in c)))  # alike and small first
    return combos[:SEARCH_LIMIT]


def _first_line(exc: BaseException | None) -> str:
    return str(exc).strip().splitlines()[0] if exc is not None and str(exc).strip() else ""
