"""remat_lint/apis/ must agree with the installed JAX, Flax, Haiku and Equinox.

Every spelling the linter resolves is imported and compared with what the package really exposes:
signatures of the remat APIs, the decorator-factory form, every checkpoint policy (kind, arity,
aliases), the APIs JAX removed, the Flax linen Module classes, and that every other name in the
framework modules' tables exists. An upgrade that changes any of these fails here first.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from types import ModuleType
from typing import Any

import pytest

from remat_lint import apis
from remat_lint.apis import linen

jax = pytest.importorskip("jax")

_PACKAGES = {"jax": "jax", "flax": "flax", "nnx": "flax", "haiku": "haiku", "equinox": "equinox"}


def resolve(qname: str) -> Any:
    """Import the longest importable module prefix of ``qname`` and get the rest as attributes."""
    parts = qname.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(qname)


def real_api(qname: str) -> Any:
    pytest.importorskip(_PACKAGES[apis.REMAT_APIS[qname].family])
    return resolve(qname)


# --- remat APIs ------------------------------------------------------------------------------------


@pytest.mark.parametrize("qname", sorted(apis.REMAT_APIS))
def test_remat_api_signature_matches(qname):
    api = apis.REMAT_APIS[qname]
    params = list(inspect.signature(real_api(qname)).parameters.values())
    target, rest = params[0], params[1:]
    assert target.name == api.target_param
    assert {p.name for p in rest} == api.keywords
    positional = tuple(p.name for p in rest if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD)
    assert positional == api.positional
    assert not any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params), "the linter assumes no *args/**kwargs"


@pytest.mark.parametrize("qname", sorted(apis.REMAT_APIS))
def test_alias_is_the_canonical_object(qname):
    api = apis.REMAT_APIS[qname]
    assert real_api(qname) is real_api(api.qname)


@pytest.mark.parametrize("qname", sorted({api.qname for api in apis.REMAT_APIS.values()}))
def test_decorator_factory_capability(qname):
    """``@api(prevent_cse=True)`` (keywords only) builds a decorator exactly when the linter says so."""
    fn = real_api(qname)
    if apis.REMAT_APIS[qname].decorator_factory:
        decorator = fn(prevent_cse=True)
        assert callable(decorator(lambda x: x))
    else:
        with pytest.raises(TypeError, match="missing 1 required positional argument"):
            fn(prevent_cse=True)


@pytest.mark.parametrize(
    "qname", sorted(q for q, api in apis.REMAT_APIS.items() if q == api.qname and api.family == "flax")
)
def test_flax_static_argnums_convention(qname):
    """nn.remat counts ``self`` as argument 0, nn_partitioning.remat does not."""
    nn = pytest.importorskip("flax.linen")
    jnp = pytest.importorskip("jax.numpy")

    class Gate(nn.Module):
        @nn.compact
        def __call__(self, x, training: bool):
            return x * 2.0 if training else x

    index = 2 if apis.REMAT_APIS[qname].self_counts_in_static_argnums else 1
    model = real_api(qname)(Gate, static_argnums=(index,))()
    x = jnp.ones(3)
    assert model.apply(model.init(jax.random.key(0), x, True), x, True).tolist() == [2.0] * 3


# --- policies --------------------------------------------------------------------------------------


def real_policies() -> dict[str, Any]:
    namespace = jax.checkpoint_policies
    return {name: getattr(namespace, name) for name in dir(namespace) if not name.startswith("_")}


def test_every_policy_is_known_and_no_other():
    assert set(apis.POLICIES) == set(real_policies())


@pytest.mark.parametrize("name", sorted(apis.POLICIES))
def test_policy_kind_and_arity(name):
    info, policy = apis.POLICIES[name], real_policies()[name]
    params = list(inspect.signature(policy).parameters.values())
    # A policy is called by JAX as policy(prim, *args, **params); a factory takes its own arguments.
    is_plain = any(p.kind is p.VAR_KEYWORD for p in params)
    assert info.kind == ("plain" if is_plain else "factory")
    if is_plain:
        return
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    varargs = [p for p in params if p.kind is p.VAR_POSITIONAL]
    assert info.min_args == sum(p.default is p.empty for p in positional)
    assert info.max_args == (None if varargs else len(positional))
    assert info.keyword_only == tuple(p.name for p in params if p.kind is p.KEYWORD_ONLY)
    assert info.takes_names == any("names" in p.name for p in varargs)
    assert info.offloads == ("offload_src" in {p.name for p in params})


@pytest.mark.parametrize("name", sorted(apis.POLICIES))
def test_policy_aliases_are_identical_objects(name):
    policies = real_policies()
    info = apis.POLICIES[name]
    same = {other for other, obj in policies.items() if obj is policies[name] and other != name}
    expected = set()
    if info.alias_of is not None:
        expected.add(info.alias_of)
    expected |= {other for other, o in apis.POLICIES.items() if o.alias_of == name}
    assert same == expected


def test_plain_policies_work_uncalled_and_factories_called():
    jnp = pytest.importorskip("jax.numpy")
    cp = jax.checkpoint_policies
    f = lambda x: jnp.sum(jnp.sin(x @ x))  # noqa: E731
    examples = {
        "save_only_these_names": ("a",),
        "save_any_names_but_these": ("a",),
        "save_anything_except_these_names": ("a",),
        "save_from_both_policies": (cp.dots_saveable, cp.nothing_saveable),
    }
    x = jnp.ones((2, 2))
    expected = jax.grad(f)(x)
    for name, info in apis.POLICIES.items():
        if info.offloads:
            continue  # needs a memory space to offload to; checked by signature above
        policy = getattr(cp, name) if info.kind == "plain" else getattr(cp, name)(*examples[name])
        assert jnp.allclose(jax.grad(jax.checkpoint(f, policy=policy))(x), expected), name


def test_policy_namespaces_are_the_same_object():
    pytest.importorskip("jax.ad_checkpoint")
    assert all(resolve(ns) is jax.checkpoint_policies for ns in apis.POLICY_NAMESPACES)


def test_checkpoint_name_is_importable():
    (qname,) = apis.CHECKPOINT_NAME
    checkpoint_name = resolve(qname)
    assert list(inspect.signature(checkpoint_name).parameters) == ["x", "name"]


# --- removed APIs and Flax classes -------------------------------------------------------------------


@pytest.mark.parametrize("removed", sorted(apis.REMOVED_APIS))
def test_removed_apis_really_raise(removed):
    module, _, attribute = removed.rpartition(".")
    with pytest.raises(AttributeError, match="removed"):
        getattr(importlib.import_module(module), attribute)
    replacement = apis.REMOVED_APIS[removed]
    assert callable(resolve(replacement))


def test_linen_module_classes_match_flax():
    nn = pytest.importorskip("flax.linen")
    exported = {
        f"flax.linen.{name}"
        for name, value in vars(nn).items()
        if inspect.isclass(value) and issubclass(value, nn.Module)
    }
    listed = {qname for qname in apis.LINEN_MODULE_CLASSES if qname.startswith("flax.linen.") and qname.count(".") == 2}
    assert listed == exported
    assert all(issubclass(resolve(qname), nn.Module) for qname in apis.LINEN_MODULE_CLASSES)


# --- linen's lifted vmap and dense layers (REM108) ------------------------------------------------


@pytest.mark.parametrize("qname", sorted(linen.MODULE_VMAPS))
def test_module_vmap_options_are_where_the_table_says(qname):
    pytest.importorskip("flax")
    params = list(inspect.signature(resolve(qname)).parameters)
    row = linen.MODULE_VMAPS[qname]
    for slot, keyword in (row.in_axes, row.variable_axes):
        assert params[slot] == keyword
    assert row.methods in params


@pytest.mark.parametrize("qname", sorted(linen.DENSE_LAYERS))
def test_keywords_that_replace_a_dense_product_are_fields_of_the_layer(qname):
    pytest.importorskip("flax")
    layer = resolve(qname)
    assert linen.DENSE_LAYERS[qname] <= {field.name for field in dataclasses.fields(layer)}
    assert callable(getattr(layer, linen.PARAM_METHOD))  # ``self.param`` of every linen Module


# --- every name in the tables ----------------------------------------------------------------------

_FRAMEWORK_NAME = re.compile(r"(?:jax|flax|haiku|equinox|optax)(?:\.\w+)+")
# Names the tables keep for code written against older releases (absent from jax 0.10.2, flax 0.12.8).
_OLDER_RELEASES = frozenset(
    {
        "jax.experimental.host_callback.call",
        "jax.experimental.host_callback.id_tap",
        "jax.experimental.pure_callback",
        "flax.linen.partitioning.with_partitioning",
        "flax.linen.spmd.with_partitioning",
    }
)


def _table_names(module: ModuleType) -> set[str]:
    """The framework names in a framework module's tables: constants, sets, rows, keys and values."""
    found = set()
    for name, value in vars(module).items():
        if name.startswith("__") or isinstance(value, ModuleType):
            continue
        items = (
            [*value.items()]
            if isinstance(value, dict)
            else value
            if isinstance(value, (set, frozenset, list, tuple))
            else [value]
        )
        for item in items:
            for part in item if isinstance(item, tuple) else (item,):
                text = getattr(part, "qname", part)
                if isinstance(text, str) and _FRAMEWORK_NAME.fullmatch(text):
                    found.add(text)
    return found


_FRAMEWORKS = [
    importlib.import_module(f"remat_lint.apis.{name}")
    for name in ("jax", "flax", "linen", "nnx", "haiku", "equinox", "optax")
]
_TABLE_NAMES = sorted(set().union(*map(_table_names, _FRAMEWORKS)) - set(apis.REMOVED_APIS) - _OLDER_RELEASES)


@pytest.mark.parametrize("qname", _TABLE_NAMES)
def test_every_table_name_exists(qname):
    pytest.importorskip(qname.split(".")[0])
    resolve(qname)


@pytest.mark.parametrize("qname", sorted(_OLDER_RELEASES))
def test_names_kept_for_older_releases_are_absent(qname):
    """When one comes back (or the installed release is older), it moves to the checked names."""
    with pytest.raises((AttributeError, ImportError)):
        resolve(qname)
