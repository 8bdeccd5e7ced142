"""Issue 25's held-out audit (fixtures/audit25, fixtures/quiet/audit25), run: each misuse whose
rule says it raises raises that error with jax 0.10.2 / flax 0.12.8, each quiet twin runs, and the
misuses whose cost is memory keep the residuals docs/audit-issue25.md states."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
pytest.importorskip("flax.nnx")
pytest.importorskip("haiku")
pytest.importorskip("equinox")
from jax._src.ad_checkpoint import saved_residuals  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
cp = jax.checkpoint_policies

# (folder under fixtures/, module, what runs it in the module's namespace, the exception it raises or None)
RUNS = [
    (
        "audit25",
        "inv_enum_value",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        "TypeError",
    ),
    (
        "quiet/audit25",
        "quiet_enum_value",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
    (
        "audit25",
        "inv_enum_getitem",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        "TypeError",
    ),
    (
        "quiet/audit25",
        "quiet_enum_getitem",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
    (
        "audit25",
        "inv_literal_field",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        "TypeError",
    ),
    (
        "quiet/audit25",
        "quiet_literal_field",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
    (
        "audit25",
        "inv_optional_field",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        "TypeError",
    ),
    (
        "quiet/audit25",
        "quiet_optional_field",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
    (
        "audit25",
        "inv_dict_get",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        "TypeError",
    ),
    (
        "quiet/audit25",
        "quiet_dict_get",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
    (
        "audit25",
        "inv_imported_table.model",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        "TypeError",
    ),
    (
        "quiet/audit25",
        "quiet_imported_table.model",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
    (
        "audit25",
        "inv_reexport.model",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        "TypeError",
    ),
    (
        "quiet/audit25",
        "quiet_reexport.model",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
    (
        "audit25",
        "inv_lru_cache_helper",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        "TypeError",
    ),
    (
        "quiet/audit25",
        "quiet_lru_cache_helper",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
    (
        "audit25",
        "inv_comprehension",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        "TypeError",
    ),
    (
        "quiet/audit25",
        "quiet_comprehension",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
    (
        "audit25",
        "inv_loop_variable",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        "TypeError",
    ),
    (
        "quiet/audit25",
        "quiet_loop_variable",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
    (
        "audit25",
        "inv_partial_decorator",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        "TypeError",
    ),
    (
        "quiet/audit25",
        "quiet_partial_decorator",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
    (
        "audit25",
        "inv_aliased_checkpoint",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        "TypeError",
    ),
    (
        "quiet/audit25",
        "quiet_aliased_checkpoint",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
    (
        "audit25",
        "inv_cached_factory",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        "TypeError",
    ),
    (
        "quiet/audit25",
        "quiet_cached_factory",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
    (
        "audit25",
        "inv_dataclass_factory_default",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        "TypeError",
    ),
    (
        "quiet/audit25",
        "quiet_dataclass_factory_default",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
    ("audit25", "inv_plain_called_through_name", "pass\n", "TypeError"),
    (
        "quiet/audit25",
        "quiet_plain_called_through_name",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
    (
        "audit25",
        "inv_factory_in_loop",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        "TypeError",
    ),
    (
        "quiet/audit25",
        "quiet_factory_in_loop",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
    (
        "quiet/audit25",
        "quiet_imported_name_tuple.model",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
    (
        "quiet/audit25",
        "quiet_names_enum",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
    (
        "quiet/audit25",
        "quiet_names_dict_get",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
    ("quiet/audit25", "quiet_named_call_between", "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\nG(w, x)\n", None),
    ("quiet/audit25", "quiet_jit_between", "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\nG(w, x)\n", None),
    ("quiet/audit25", "quiet_partial_of_checkpoint", "w = jnp.ones((4, 4))\nG(w)\n", None),
    (
        "quiet/audit25",
        "quiet_whole_forward_jax",
        "G([jnp.ones((4, 4))] * 4, jnp.ones((2, 4)), jnp.ones((2, 4)))\n",
        None,
    ),
    ("quiet/audit25", "quiet_whole_forward_nnx", "G(MLP(nnx.Rngs(0)), jnp.ones((2, 4)), jnp.ones((2, 4)))\n", None),
    (
        "quiet/audit25",
        "quiet_whole_forward_linen",
        "x = jnp.ones((2, 4)); G(MLP().init(jax.random.key(0), x), x, x)\n",
        None,
    ),
    (
        "quiet/audit25",
        "quiet_both_keep_everything",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
    (
        "quiet/audit25",
        "quiet_dataclass_policy_default",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
    (
        "quiet/audit25",
        "quiet_table_get_keep_all",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
    (
        "quiet/audit25",
        "quiet_eqx_config_policy",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
    (
        "quiet/audit25",
        "quiet_einsum_two_operands",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
    (
        "quiet/audit25",
        "quiet_matmul_bias_lambda",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
    (
        "quiet/audit25",
        "quiet_hk_remat_linear",
        "x = jnp.ones((2, 4)); p = model.init(jax.random.key(0), x); jax.grad(lambda p: model.apply(p, None, x).sum())(p)\n",
        None,
    ),
    (
        "quiet/audit25",
        "quiet_eqx_checkpoint_linear",
        "n = Net(jax.random.key(0)); eqx.filter_grad(lambda n: n(jnp.ones(4)).sum())(n)\n",
        None,
    ),
    (
        "quiet/audit25",
        "quiet_nnx_linear_nested_def",
        "n = Net(nnx.Rngs(0)); nnx.grad(lambda n: n(jnp.ones((2, 4))).sum())(n)\n",
        None,
    ),
    (
        "quiet/audit25",
        "quiet_none_guard_dict_call",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
    (
        "quiet/audit25",
        "quiet_none_guard_imported.model",
        "x = jnp.ones((2, 4)); w = jnp.ones((4, 4))\njax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
    (
        "audit25",
        "inv_nnx_closure_dropout_def",
        "n = Net(nnx.Rngs(0)); nnx.grad(lambda n: n(jnp.ones((2, 4))).sum())(n)\n",
        "TraceContextError",
    ),
    (
        "quiet/audit25",
        "quiet_nnx_closure_dropout_def",
        "n = Net(nnx.Rngs(0)); nnx.grad(lambda n: n(jnp.ones((2, 4))).sum())(n)\n",
        None,
    ),
    (
        "audit25",
        "inv_nnx_closure_batchnorm_sub",
        "n = Net(nnx.Rngs(0)); nnx.grad(lambda n: n(jnp.ones((2, 4))).sum())(n)\n",
        "TraceContextError",
    ),
    (
        "quiet/audit25",
        "quiet_nnx_closure_batchnorm_sub",
        "n = Net(nnx.Rngs(0)); nnx.grad(lambda n: n(jnp.ones((2, 4))).sum())(n)\n",
        None,
    ),
    (
        "audit25",
        "inv_dropout_rate_field",
        "x = jnp.ones((2, 4)); Model().init(jax.random.key(0), x, True)\n",
        "TracerBoolConversionError",
    ),
    (
        "quiet/audit25",
        "quiet_dropout_rate_field",
        "x = jnp.ones((2, 4)); Model().init(jax.random.key(0), x, True)\n",
        None,
    ),
    (
        "audit25",
        "inv_keyword_flag_init",
        "x = jnp.ones((2, 4)); Model().init(jax.random.key(0), x, train=False)\n",
        "TracerBoolConversionError",
    ),
    (
        "quiet/audit25",
        "quiet_keyword_flag_init",
        "x = jnp.ones((2, 4)); Model().init(jax.random.key(0), x, train=False)\n",
        None,
    ),
    ("audit25", "inv_flag_enum_member_literal", "pass\n", "TracerBoolConversionError"),
    ("quiet/audit25", "quiet_flag_enum_member_literal", "pass\n", None),
    ("quiet/audit25", "quiet_nnx_remat_class_alias", "apply_block(Block(nnx.Rngs(0)), jnp.ones((2, 4)))\n", None),
    (
        "quiet/audit25",
        "quiet_vmap_no_batch_dims",
        "x = jnp.ones((3, 2, 4)); w = jnp.ones((4, 4)); jax.grad(lambda w: F(x, w).sum())(w)\n",
        None,
    ),
]


def load(folder: str, module: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(FIXTURES / folder))
    for name in [n for n in sys.modules if n.split(".")[0] == module.split(".")[0]]:
        del sys.modules[name]  # the misuse and its twin may share a package name in another run
    return importlib.import_module(module)


@pytest.mark.parametrize(("folder", "module", "driver", "raised"), RUNS, ids=[r[1] for r in RUNS])
def test_each_case_fails_or_runs_as_annotated(folder, module, driver, raised, monkeypatch):
    try:
        namespace = vars(load(folder, module, monkeypatch))
        exec(driver, namespace)
    except Exception as error:  # noqa: BLE001 -- the exception's name is what is checked
        assert type(error).__name__ == raised, error
    else:
        assert raised is None


def residuals(fn, *args) -> int:
    return len(saved_residuals(fn, *args))


def test_the_waste_cases_keep_what_they_are_said_to(monkeypatch):
    x, w = jnp.ones((2, 4)), jnp.ones((4, 4))
    names = load("audit25", "inv_names_enum", monkeypatch)
    assert residuals(names.F, x, w) < residuals(
        jax.checkpoint(names.block, policy=cp.save_only_these_names("q_proj")), x, w
    )
    for module in ("inv_both_keep_everything", "inv_table_get_keep_all"):
        keep_all = load("audit25", module, monkeypatch)
        assert residuals(keep_all.F, x, w) == residuals(keep_all.block, x, w) == 6
    linear = load("audit25", "inv_einsum_two_operands", monkeypatch)
    assert residuals(linear.F, x, w) == residuals(lambda x, w: jnp.einsum("bd,de->be", x, w), x, w)
    guard = load("audit25", "inv_none_guard_dict_call", monkeypatch)
    assert residuals(guard.build("full"), x, w) == residuals(guard.block, x, w) == 6
    assert residuals(jax.checkpoint(guard.block, policy=cp.nothing_saveable), x, w) == 2


@pytest.mark.parametrize(("in_axes", "kept"), [((0, None), 4), ((0, 0), 2)])
def test_a_no_batch_dims_policy_under_vmap_saves_nothing_only_when_the_weights_are_batched(in_axes, kept, monkeypatch):
    block = load("audit25", "inv_vmap_no_batch_dims", monkeypatch).block
    w = jnp.ones((3, 4, 4)) if in_axes[1] == 0 else jnp.ones((4, 4))
    wrapped = jax.vmap(jax.checkpoint(block, policy=cp.dots_with_no_batch_dims_saveable), in_axes=in_axes)
    assert residuals(wrapped, jnp.ones((3, 2, 4)), w) == kept
    dots = jax.vmap(jax.checkpoint(block, policy=cp.dots_saveable), in_axes=in_axes)
    assert residuals(dots, jnp.ones((3, 2, 4)), w) == 4
