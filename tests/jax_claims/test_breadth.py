"""What the breadth rules (REM012-REM016, REM106) tell users about JAX, Flax, Haiku and NNX,
checked against the installed packages: each statement a message makes, run for real (tiny
shapes), and the fixtures' quiet code runs."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from tests.helpers import fix_all, lint

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
nn = pytest.importorskip("flax.linen")
nnx = pytest.importorskip("flax.nnx")
flax_errors = pytest.importorskip("flax.errors")

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
KEY = jax.random.key(0)
X = jnp.ones((2, 4))
RNGS = {"params": KEY, "dropout": KEY}


def load_fixture(name: str, path: Path | None = None):
    spec = importlib.util.spec_from_file_location(name.replace("/", "_"), path or FIXTURES / f"{name}.py")
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def load_fixed(name: str, code: str, directory: Path):
    """The fixture after every fix of ``code`` (as ``--fix --unsafe-fixes`` writes it), imported."""
    path = directory / f"{name}_fixed.py"
    path.write_text(fix_all((FIXTURES / f"{name}.py").read_text(), {code}))
    return load_fixture(f"{name}_fixed", path)


def fixture_messages(name: str, code: str) -> list[str]:
    source = (FIXTURES / f"{name}.py").read_text()
    return [f.message for f in lint(source, {code}, path=f"{name}.py")]


# --- REM012: static_argnums checked against positional arguments only ----------------------------

STATIC_INDEX_ERROR = "can only take integer values greater than or equal to `-len(args)` and less than `len(args)`"


def test_rem012_keyword_and_default_raise_value_error_positional_works():
    f = load_fixture("rem012_static_arg_not_positional")
    messages = fixture_messages("rem012_static_arg_not_positional", "REM012")
    assert len(messages) == 5 and all("raises `ValueError`" in m for m in messages)
    for call in (f.train_step, f.eval_step, f.deep):
        with pytest.raises(ValueError, match=re.escape(STATIC_INDEX_ERROR)):
            call(X)
    for encoder in (f.Encoder(), f.SetupEncoder()):
        with pytest.raises(ValueError, match=re.escape(STATIC_INDEX_ERROR)):
            encoder.init(RNGS, X, True)
    f.train_step_positional(X)
    f.forwarded(X, True)
    f.EncoderPositional().init(RNGS, X, True)


def test_rem012_nn_remat_argument_left_at_its_default_raises_value_error():
    source = (
        "import flax.linen as nn\nclass B(nn.Module):\n    @nn.compact\n    def __call__(self, x, deterministic=True):\n"
        "        return x\nR = nn.remat(B, static_argnums=(2,))\nclass M(nn.Module):\n    @nn.compact\n"
        "    def __call__(self, x):\n        return R()(x)\n"
    )
    (finding,) = lint(source, {"REM012"})
    assert "`deterministic` is in `static_argnums` but not passed, so this call raises `ValueError`" in finding.message

    class B(nn.Module):
        @nn.compact
        def __call__(self, x, deterministic=True):
            return x

    remat_b = nn.remat(B, static_argnums=(2,))

    class M(nn.Module):
        @nn.compact
        def __call__(self, x):
            return remat_b()(x)

    with pytest.raises(ValueError, match=re.escape(STATIC_INDEX_ERROR)):
        M().init(KEY, X)


def test_rem012_holds_for_hk_remat_and_not_for_nnx_remat():
    hk = pytest.importorskip("haiku")

    def g(x, flag=False):
        return x * 2 if flag else x

    def forward(x):
        return hk.remat(g, static_argnums=(1,))(x, flag=True)

    with pytest.raises(ValueError, match=re.escape(STATIC_INDEX_ERROR)):
        hk.transform(forward).init(KEY, X)
    assert float(nnx.remat(g, static_argnums=(1,))(X, flag=True)[0, 0]) == 2.0  # nnx takes the keyword


# --- REM202 (class 7): a literal flag at a visible call is a traced scalar -------------------------


def test_rem202_literal_flag_passed_by_a_call_raises_tracer_bool_conversion():
    f = load_fixture("rem202_literal_flag_at_call")
    messages = fixture_messages("rem202_literal_flag_at_call", "REM202")
    assert len(messages) == 2 and all("raises `TracerBoolConversionError`" in m for m in messages)
    with pytest.raises(jax.errors.TracerBoolConversionError):
        jax.checkpoint(f.block)(X, use_bias=False)
    with pytest.raises(jax.errors.TracerBoolConversionError):
        f.forward(X)
    assert float(jax.checkpoint(f.block, static_argnums=(1,))(X, False)[0, 0]) == pytest.approx(0.7615942)
    f.masked(X)
    f.with_config(X)


# --- REM013: nnx.remat on a Module class checkpoints the constructor only --------------------------


def saved_residual_count(module, x) -> int:
    graphdef, state = nnx.split(module)
    loss = lambda s, h: jnp.sum(nnx.merge(graphdef, s)(h))
    from jax._src.ad_checkpoint import saved_residuals

    return len(saved_residuals(loss, state, x))


def test_rem013_remat_of_the_class_or_init_saves_what_no_remat_saves():
    f = load_fixture("rem013_nnx_remat_module_class")
    messages = fixture_messages("rem013_nnx_remat_module_class", "REM013")
    assert len(messages) == 3 and all("7 and 7; 4 with `nnx.remat` on `__call__`" in m for m in messages)
    assert all("a keyword argument or an int size raises `TypeError`" in m for m in messages)
    with pytest.raises(TypeError, match="keyword arguments could not be resolved to positions"):
        f.RematBlock(rngs=nnx.Rngs(0))

    class Sized(nnx.Module):
        def __init__(self, features, rngs):
            self.linear = nnx.Linear(features, features, rngs=rngs)

    with pytest.raises(TypeError, match="Shapes must be 1D sequences of concrete values"):
        nnx.remat(Sized)(4, nnx.Rngs(0))
    rngs = lambda: nnx.Rngs(0)
    x = jnp.ones((2, 4))
    assert saved_residual_count(f.Block(rngs()), x) == 7
    assert saved_residual_count(f.RematBlock(rngs()), x) == 7
    assert saved_residual_count(f.InitRematBlock(rngs()), x) == 7
    assert saved_residual_count(f.CallRematBlock(rngs()), x) == 4
    assert type(f.RematBlock(rngs())) is f.Block  # an ordinary Block: its calls are not checkpointed
    assert saved_residual_count(f.Encoder(rngs()), x) == 2 * 7
    with pytest.raises(TypeError, match="keyword arguments could not be resolved"):
        nnx.remat(nnx.Linear)(4, 4, rngs=rngs())  # flax's own layers: a crash, not a no-op (left to no rule)
    block = f.Block(rngs())
    assert jnp.allclose(f.apply_remat(block, x), block(x)) and jnp.allclose(f.apply_instance_remat(block, x), block(x))


# --- REM014: @nn.compact above @nn.remat ------------------------------------------------------------


def test_rem014_compact_above_remat_raises_at_init_and_the_fix_works(tmp_path):
    f = load_fixture("rem014_compact_above_remat")
    submodule, parameter, variable = fixture_messages("rem014_compact_above_remat", "REM014")
    assert "raises `AssignSubModuleError`" in submodule and "raises `ValueError`" in parameter
    assert "raises `ValueError`" in variable and "Flax allows variables only there" in variable
    with pytest.raises(
        ValueError, match="Variables must be initialized in `setup\\(\\)` or in a method wrapped in `@compact`"
    ):
        f.CountingBlock().init(RNGS, X)
    with pytest.raises(flax_errors.AssignSubModuleError):
        f.MlpBlock().init(RNGS, X)
    with pytest.raises(
        ValueError, match="Parameters must be initialized in `setup\\(\\)` or in a method wrapped in `@compact`"
    ):
        f.ScaleBlock().init(RNGS, X, True)
    fixed = load_fixed("rem014_compact_above_remat", "REM014", tmp_path)
    fixed.MlpBlock().init(RNGS, X)
    fixed.ScaleBlock().init(RNGS, X, True)
    fixed.CountingBlock().init(RNGS, X)
    f.RematAboveCompact().init(RNGS, X)
    f.SetupBlock().init(RNGS, X)


# --- Suppressions: a try covers its own body only ----------------------------------------------------


def test_guarded_script_still_fails_and_is_reported(capsys):
    f = load_fixture("rem004_try_guarded_script")
    (message,) = fixture_messages("rem004_try_guarded_script", "REM004")
    assert "TransformTargetError" in message
    assert f.run() is None and "init failed" in capsys.readouterr().out  # the guard hides the error at run time
    f.test_instance_raises()
    f.test_instance_raises_in_try()


# --- Suppressions: a called nothing_saveable() is no policy, so the whole loss is still checkpointed --


def test_called_nothing_saveable_gives_the_grad_of_no_policy():
    f = load_fixture("rem101_called_nothing_saveable")
    assert len(fixture_messages("rem101_called_nothing_saveable", "REM101")) == 1
    assert jax.checkpoint_policies.nothing_saveable() is False
    w, x = jnp.ones((8, 8)), jnp.ones((4, 8))
    loss = lambda w, x: jnp.sum(jnp.tanh(jnp.sin(x @ w) @ w))
    called = jax.make_jaxpr(f.loss_grad)(w, x)
    default = jax.make_jaxpr(jax.grad(jax.checkpoint(loss)))(w, x)
    assert str(called).replace("policy=False", "policy=None") == str(default)
    assert jnp.allclose(f.loss_grad(w, x), jax.grad(loss)(w, x)) and f.saving_grad(w, x).shape == (8, 8)


# --- REM015: jax.checkpoint around the first call of a Flax or Haiku layer ------------------------


def _leaves_are_tracers(variables) -> bool:
    return all(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(variables))


def test_rem015_init_stores_tracers_and_apply_raises_unexpected_tracer_error():
    hk = pytest.importorskip("haiku")
    f = load_fixture("rem015_jax_checkpoint_around_modules")
    messages = fixture_messages("rem015_jax_checkpoint_around_modules", "REM015")
    assert len(messages) == 7 and all(
        "the parameters are tracers and `apply` raises `UnexpectedTracerError`" in m
        and "a jitted `init` raises at once" in m
        and "(`optax.apply_updates`) raises" in m
        for m in messages
    )
    for module in (f.InlineBlock(), f.LocalBlock(), f.SetupBlock(), f.NestedBlock()):
        variables = module.init(KEY, X)
        assert _leaves_are_tracers(variables)
        with pytest.raises(jax.errors.UnexpectedTracerError):
            module.apply(variables, X)
    for forward in (f.haiku_forward, f.haiku_block_forward, f.haiku_mlp_forward):
        transformed = hk.transform(forward)
        params = transformed.init(KEY, X)
        assert _leaves_are_tracers(params)
        with pytest.raises(jax.errors.UnexpectedTracerError):
            transformed.apply(params, None, X)  # Haiku's apply raises as Flax's does
        with pytest.raises(jax.errors.UnexpectedTracerError):
            jax.jit(transformed.init)(KEY, X)
    optax = pytest.importorskip("optax")
    for leaked in (f.InlineBlock().init(KEY, X), hk.transform(f.haiku_forward).init(KEY, X)):
        with pytest.raises(jax.errors.UnexpectedTracerError):
            optax.apply_updates(leaked, jax.tree_util.tree_map(jnp.zeros_like, leaked))
    for module in (f.RematBlock(), f.CalledFirstOutside(), f.SetupCalledOutside(), f.LiftedFunctionBlock()):
        variables = module.init(KEY, X)
        jax.grad(lambda v, m=module: jnp.sum(m.apply(v, X)))(variables)
    dense_variables = nn.Dense(4).init(KEY, X)
    jax.grad(lambda v: jnp.sum(f.explicit_variables(v, X)))(dense_variables)
    remat = hk.transform(f.haiku_remat_forward)
    remat.apply(remat.init(KEY, X), None, X)


# --- REM016: nn_partitioning.remat drops keyword arguments -----------------------------------------


def test_rem016_keyword_is_dropped_with_a_warning_and_keeps_the_default():
    f = load_fixture("rem016_remat_keyword_dropped")
    messages = fixture_messages("rem016_remat_keyword_dropped", "REM016")
    assert len(messages) == 3 and all("keeps its default `True`" in m for m in messages)
    rngs = {"dropout": jax.random.key(1)}
    for block in (f.Block(), f.SetupBlock(), f.ConfiguredBlock()):
        variables = block.init(RNGS, X, True)
        with pytest.warns(
            RuntimeWarning, match='kwargs are not supported in remat, so "deterministic" is\\(are\\) ignored'
        ):
            train = block.apply(variables, X, False, rngs=rngs)  # the flag stays a Python bool: no tracer error
        assert jnp.array_equal(train, block.apply(variables, X, True))  # dropout off: training output is eval output
    variables = f.Block().init(RNGS, X, True)
    positional = f.PositionalBlock().apply(variables, X, False, rngs=rngs)
    assert not jnp.array_equal(positional, f.PositionalBlock().apply(variables, X, True))


# --- REM003 (class 8): policy arguments ---------------------------------------------------------------


def test_rem003_overlapping_offload_names_and_table_factory_fail():
    f = load_fixture("rem003_policy_arguments")
    overlap, table, helper_table = fixture_messages("rem003_policy_arguments", "REM003")
    assert "'key'" in overlap and "raises `ValueError`" in overlap
    with pytest.raises(ValueError, match="should not intersect"):
        f.offload_policy()
    f.split_offload_policy()
    assert "raises `TypeError: save_only_these_names() got an unexpected keyword argument" in table
    with pytest.raises(TypeError, match="save_only_these_names\\(\\) got an unexpected keyword argument"):
        jax.grad(f.block)(X, "names")
    jax.grad(f.block)(X, "dots")
    assert "`TypeError: save_any_names_but_these() got an unexpected keyword argument" in helper_table
    policy = f.get_gradient_checkpoint_policy("save_any_names_but_these")
    with pytest.raises(TypeError, match="save_any_names_but_these\\(\\) got an unexpected keyword argument"):
        jax.grad(jax.checkpoint(lambda h: jnp.sum(jnp.sin(h)), policy=policy))(X)
    jax.grad(f.named_block)(X, ("q",))


# --- REM017: methods= takes names -------------------------------------------------------------------


def test_rem017_method_objects_raise_type_error_and_the_fix_works(tmp_path):
    f = load_fixture("rem017_remat_methods_not_names")
    (message,) = fixture_messages("rem017_remat_methods_not_names", "REM017")
    assert "`TypeError: attribute name must be string, not 'function'`" in message
    with pytest.raises(TypeError, match="attribute name must be string, not 'function'"):
        f.remat_autoencoder()
    fixed = load_fixed("rem017_remat_methods_not_names", "REM017", tmp_path)
    for build in (fixed.remat_autoencoder, f.remat_by_name):
        model = build()()
        model.apply(model.init(KEY, X), X)


# --- REM106: a checkpoint around a single linear layer -------------------------------------------------


def _residual_shapes(loss, *args) -> list[str]:
    from jax._src.ad_checkpoint import saved_residuals

    # The shape and what it is (an argument, or the output of which primitive), not the argument's path.
    return sorted(f"{a.shape} {s.split(' from ')[0].split('[')[0]}" for a, s in saved_residuals(loss, *args))


def _grad_temp_bytes(loss, *args) -> int:
    return jax.jit(jax.grad(loss)).lower(*args).compile().memory_analysis().temp_size_in_bytes


def test_rem106_linear_layer_checkpoint_saves_the_same_residuals():
    f = load_fixture("rem106_checkpoint_linear_layer")
    messages = fixture_messages("rem106_checkpoint_linear_layer", "REM106")
    assert len(messages) == 3 and all(
        "the same residuals as without it and no lower temp memory" in m for m in messages
    )
    x = jnp.ones((8, 16))

    class PlainMlp(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(16)(jnp.tanh(nn.Dense(32)(nn.relu(nn.Dense(32)(x)))))

    (plain, plain_vars), (remat, remat_vars) = ((m, m.init(KEY, x)) for m in (PlainMlp(), f.Mlp()))
    plain_loss = lambda v, x: jnp.sum(plain.apply(v, x) ** 2)
    remat_loss = lambda v, x: jnp.sum(remat.apply(v, x) ** 2)
    assert _residual_shapes(plain_loss, plain_vars, x) == _residual_shapes(remat_loss, remat_vars, x)
    assert len(_residual_shapes(plain_loss, plain_vars, x)) == 10
    assert _grad_temp_bytes(remat_loss, remat_vars, x) >= _grad_temp_bytes(plain_loss, plain_vars, x)
    params = (jnp.ones((16, 32)), jnp.ones(32), jnp.ones((32, 16)), jnp.ones(16))
    unchecked = lambda params, x: jnp.sum((jnp.tanh(x @ params[0] + params[1]) @ params[2] + params[3]) ** 2)
    assert _residual_shapes(f.mlp, params, x) == _residual_shapes(unchecked, params, x)
    assert len(_residual_shapes(f.mlp, params, x)) == 6
    assert _grad_temp_bytes(f.mlp, params, x) >= _grad_temp_bytes(unchecked, params, x)
    w = jnp.ones((16, 16))
    checked_dot = lambda x, w: jnp.sum(f.projected(x, w))
    plain_dot = lambda x, w: jnp.sum(jnp.tanh(jnp.dot(x, w)))
    assert _residual_shapes(checked_dot, x, w) == _residual_shapes(plain_dot, x, w)


@pytest.mark.parametrize("shape", [(8, 16, 32), (32, 64, 8)])
def test_rem106_other_linear_forms_save_the_same_residuals(shape):
    """einsum plus a bias, hk.Linear, eqx.nn.Linear and nnx.Linear: the residuals of a loss over
    the checkpointed layer are those of the same loss without the checkpoint."""
    hk = pytest.importorskip("haiku")
    eqx = pytest.importorskip("equinox")
    from flax import nnx

    f = load_fixture("rem106_linear_layer_forms")
    assert len(fixture_messages("rem106_linear_layer_forms", "REM106")) == 6
    batch, features, out = shape
    x, w, b = jnp.ones((batch, features)), jnp.ones((features, out)), jnp.ones(out)

    def tail(y):
        return jnp.sum(jnp.tanh(y) ** 2)

    unchecked = lambda x, w: tail(jnp.einsum("bi,io->bo", x, w))
    assert _residual_shapes(lambda x, w: tail(f.project(x, w)), x, w) == _residual_shapes(unchecked, x, w)
    unchecked_affine = lambda x, w, b: tail(jnp.einsum("bi,io->bo", x, w) + b)
    assert _residual_shapes(lambda x, w, b: tail(f.affine(x, w, b)), x, w, b) == _residual_shapes(
        unchecked_affine, x, w, b
    )

    plain_hk = hk.transform(lambda x: jnp.tanh(hk.Linear(4)(x)))
    remat_hk = hk.transform(f.haiku_forward)
    params = plain_hk.init(KEY, x)
    assert _residual_shapes(lambda p, x: tail(remat_hk.apply(p, None, x)), params, x) == _residual_shapes(
        lambda p, x: tail(plain_hk.apply(p, None, x)), params, x
    )

    layer = eqx.nn.Linear(features, out, key=KEY)
    checked = lambda lin, x: tail(jax.vmap(eqx.filter_checkpoint(lin))(x))  # the layer as an argument: its weights too
    assert _residual_shapes(checked, layer, x) == _residual_shapes(lambda lin, x: tail(jax.vmap(lin)(x)), layer, x)

    head = f.Head(nnx.Rngs(0))
    graph, state = nnx.split(head)
    x3 = jnp.ones((batch, 3))
    remat_loss = lambda state, x: jnp.sum(nnx.merge(graph, state)(x) ** 2)
    plain_loss = lambda state, x: jnp.sum(jnp.tanh(nnx.merge(graph, state).proj(x)) ** 2)
    assert _residual_shapes(remat_loss, state, x3) == _residual_shapes(plain_loss, state, x3)
    lambda_loss = lambda state, x: jnp.sum(nnx.merge(graph, state).project(x) ** 2)
    unchecked_loss = lambda state, x: jnp.sum(nnx.merge(graph, state).proj(x) ** 2)
    assert _residual_shapes(lambda_loss, state, x3) == _residual_shapes(unchecked_loss, state, x3)


def test_rem016_a_dropped_keyword_without_default_raises_type_error():
    nn_partitioning = pytest.importorskip("flax.linen.partitioning")
    source = (
        "import flax.linen as nn\nimport flax.linen.partitioning as nn_partitioning\n"
        "class Scale(nn.Module):\n    @nn.compact\n    def __call__(self, x, scale):\n        return x * scale\n"
        "class Outer(nn.Module):\n    @nn.compact\n    def __call__(self, x):\n"
        "        return nn_partitioning.remat(Scale)()(x, scale=2.0)\n"
    )
    (finding,) = lint(source, {"REM016"})
    assert "`scale` has no default, so the call raises `TypeError` (missing argument)" in finding.message

    class Scale(nn.Module):
        @nn.compact
        def __call__(self, x, scale):
            return x * scale

    class Outer(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn_partitioning.remat(Scale)()(x, scale=2.0)

    with (
        pytest.warns(RuntimeWarning),
        pytest.raises(TypeError, match="missing 1 required positional argument: 'scale'"),
    ):
        Outer().init(KEY, X)
