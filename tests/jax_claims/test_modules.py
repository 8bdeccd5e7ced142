"""What REM004, REM009 and REM010 tell users about JAX and Flax, checked against the installed
packages: each message's claim, the fix's result, and that the quiet fixtures are correct code."""

from __future__ import annotations

import functools
import runpy
from pathlib import Path

import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
nn = pytest.importorskip("flax.linen")
flax_errors = pytest.importorskip("flax.errors")
nn_partitioning = pytest.importorskip("flax.linen.partitioning")

from tests.helpers import codes, fix_all  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
KEY = jax.random.key(0)
X = jnp.ones((2, 4))


class Mlp(nn.Module):
    features: int = 4

    @nn.compact
    def __call__(self, x):
        return nn.Dense(self.features)(x)


def grad_of(model, *args):
    variables = model.init(KEY, *args)
    return jax.grad(lambda v: jnp.sum(model.apply(v, *args)))(variables)


# --- REM004 ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "transform", [nn.remat, nn.checkpoint, nn_partitioning.remat], ids=["remat", "checkpoint", "partitioning"]
)
def test_linen_remat_of_an_instance_raises_transform_target_error(transform):
    with pytest.raises(flax_errors.TransformTargetError, match="must be applied to Modules classes"):
        transform(Mlp(4))
    with pytest.raises(flax_errors.TransformTargetError):
        transform(nn.Dense(4))


def test_linen_remat_of_a_setup_submodule_raises_at_init():
    class Parent(nn.Module):
        def setup(self):
            self.sub = Mlp(4)

        def __call__(self, x):
            return nn.remat(self.sub)(x)

    with pytest.raises(flax_errors.TransformTargetError):
        Parent().init(KEY, X)


def test_linen_remat_of_a_bound_method_fails_when_called():
    class Parent(nn.Module):
        pass_self: bool

        def setup(self):
            self.dense = nn.Dense(4)

        def encode(self, x):
            return self.dense(x)

        def __call__(self, x):
            wrapped = nn.remat(self.encode)
            return wrapped(self, x) if self.pass_self else wrapped(x)

    with pytest.raises(AttributeError):
        Parent(pass_self=False).init(KEY, X)
    with pytest.raises(TypeError, match="positional arguments"):
        Parent(pass_self=True).init(KEY, X)


def test_rem004_fix_and_suggestions_work():
    source = "import flax.linen as nn\nclass Mlp(nn.Module):\n    pass\ny = nn.remat(Mlp(4, name='m'))(x)\n"
    assert fix_all(source, {"REM004"}).endswith("y = nn.remat(Mlp)(4, name='m')(x)\n")

    class Fixed(nn.Module):
        def setup(self):
            self.dense = nn.Dense(4)

        def encode(self, x):
            return self.dense(x)

        @nn.compact
        def __call__(self, x):
            x = nn.remat(Mlp)(4, name="m")(x)  # the fixed form
            return nn.remat(type(self).encode)(self, x)  # the bound-method suggestion

    grad_of(Fixed(), X)


# --- REM009 ---------------------------------------------------------------------------------------


def test_jax_checkpoint_of_a_module_class_is_a_plain_function():
    wrapped = jax.checkpoint(Mlp)
    with pytest.raises(TypeError, match="not a valid JAX type"):
        wrapped(4)
    with pytest.raises(AttributeError, match="has no attribute 'init'"):
        wrapped.init(KEY, X)


def test_jax_checkpoint_of_a_module_instance_fails_inside_a_parent():
    class Parent(nn.Module):
        @nn.compact
        def __call__(self, x):
            return jax.checkpoint(Mlp(4))(x)

    with pytest.raises(TypeError, match="Can't call __hash__ on modules that hold variables"):
        Parent().init(KEY, X)
    with pytest.raises(AttributeError, match="has no attribute 'init'"):
        jax.checkpoint(Mlp(4)).init(KEY, X)


def test_jax_checkpoint_on_a_module_method_traces_self():
    class Decorated(nn.Module):
        @jax.checkpoint
        @nn.compact
        def __call__(self, x):
            return nn.Dense(4)(x)

    with pytest.raises(TypeError, match="Cannot interpret value of type .* as an abstract array"):
        Decorated().init(KEY, X)


def test_jax_checkpoint_with_static_self_leaks_tracers_into_params():
    class StaticSelf(nn.Module):
        @functools.partial(jax.checkpoint, static_argnums=(0,))
        @nn.compact
        def __call__(self, x):
            return nn.Dense(4)(x)

    variables = StaticSelf().init(KEY, X)  # no error: that is the trap
    assert all(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(variables))
    with pytest.raises(jax.errors.UnexpectedTracerError):
        StaticSelf().apply(variables, X)


def test_rem009_fix_gives_working_flax_code():
    source = (
        "import jax\nimport flax.linen as nn\nclass Block(nn.Module):\n    @jax.checkpoint\n    @nn.compact\n"
        "    def __call__(self, x):\n        return nn.Dense(4)(x)\nR = jax.remat(Block, policy=jax.checkpoint_policies.dots_saveable)\n"
    )
    fixed = fix_all(source, {"REM009"})
    assert "@nn.remat\n    @nn.compact" in fixed and "R = nn.remat(Block, policy=" in fixed
    namespace: dict = {}
    exec(compile(fixed, "fixed.py", "exec"), namespace)  # noqa: S102 - our own generated code
    grad_of(namespace["Block"](), X)
    grad_of(namespace["R"](), X)


def test_nn_remat_must_be_above_nn_compact():
    """Why the REM009 fix only replaces the outermost decorator."""

    class Reversed(nn.Module):
        @nn.compact
        @nn.remat
        def __call__(self, x):
            return nn.Dense(4)(x)

    with pytest.raises(flax_errors.AssignSubModuleError):
        Reversed().init(KEY, X)


# --- REM010 ---------------------------------------------------------------------------------------


def branchy(x, training):
    return jnp.sum(jnp.sin(x)) if training else jnp.sum(x)


def scaled(x, mode):
    return jnp.sum(x) * (2.0 if mode == "double" else 1.0)


def test_static_argnames_is_ignored_by_default():
    assert jax.config.jax_remat3 is False
    wrapped = jax.checkpoint(branchy, static_argnames=("training",))
    with pytest.raises(jax.errors.TracerBoolConversionError):
        wrapped(X, training=True)
    with pytest.raises(jax.errors.TracerBoolConversionError):
        jax.grad(wrapped)(X, True)
    with pytest.raises(TypeError, match="is not a valid JAX type"):
        jax.checkpoint(scaled, static_argnames="mode")(X, mode="double")


def test_static_argnames_next_to_static_argnums_for_the_same_argument_is_harmless():
    # REM010 stays quiet: static_argnums already makes the argument static (positional calls).
    source = (
        "import jax\ndef branchy(x, training):\n    return x\n"
        "wrapped = jax.checkpoint(branchy, static_argnums=(1,), static_argnames=('training',))\n"
    )
    assert codes(source, select={"REM010"}) == []
    wrapped = jax.checkpoint(branchy, static_argnums=(1,), static_argnames=("training",))
    assert jnp.allclose(jax.grad(wrapped)(X, True), jnp.cos(X))


def test_static_argnames_is_honoured_only_under_jax_remat3_and_only_by_keyword():
    jax.config.update("jax_remat3", True)
    try:
        wrapped = jax.checkpoint(branchy, static_argnames=("training",))
        jax.grad(wrapped)(X, training=True)
        with pytest.raises(jax.errors.TracerBoolConversionError):
            wrapped(X, True)
    finally:
        jax.config.update("jax_remat3", False)


def test_rem010_fix_works_for_positional_calls_only():
    source = (
        "import functools\nimport jax\n@functools.partial(jax.checkpoint, static_argnames=('training',))\n"
        "def branchy(x, training):\n    return x\n"
    )
    assert "static_argnums=(1,)" in fix_all(source, {"REM010"})
    fixed = jax.checkpoint(branchy, static_argnums=(1,))
    jax.grad(fixed)(X, True)
    with pytest.raises(ValueError, match="static_argnums"):
        fixed(X, training=True)


# --- quiet fixtures are correct code ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["flax_remat_patterns.py", "haiku_equinox_nnx_instances.py"])
def test_quiet_fixture_runs(name, capsys):
    if name.startswith("haiku"):
        pytest.importorskip("haiku")
        pytest.importorskip("equinox")
    runpy.run_path(str(FIXTURES / "quiet" / name), run_name="__main__")
    assert capsys.readouterr().out.strip().endswith("ok")
