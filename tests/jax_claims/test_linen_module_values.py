"""REM009, REM014 and REM015 through the value layer, run for real: each Module of
fixtures/rem0NN_module_values.py (and of fixtures/xmod_rem009/, where the class comes from another
module) fails as its rule reports; its quiet twin initialises and runs."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from tests.jax_claims.test_cross_module import fixture_package

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
errors = pytest.importorskip("flax.errors")

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
KEY = jax.random.key(0)
X = jnp.ones((2, 4))
NAMES = {
    "rem009": ["FromPartial", "FromFactory", "ClassOfInstance"],
    "rem014": ["FromPartial", "FromFactory"],
    "rem015": ["FromPartial", "FromFactory"],
}


def _module(folder: Path, rule: str, name: str):
    return runpy.run_path(str(folder / f"{rule}_module_values.py"))[name]()


@pytest.mark.parametrize("name", NAMES["rem009"])
def test_rem009_jax_checkpoint_of_a_module_class_raises_type_error(name):
    with pytest.raises(TypeError, match="is not a valid JAX type"):
        _module(FIXTURES, "rem009", name).init(KEY, X)


@pytest.mark.parametrize("name", NAMES["rem014"])
def test_rem014_compact_above_remat_raises_assign_submodule_error(name):
    with pytest.raises(errors.AssignSubModuleError):
        _module(FIXTURES, "rem014", name).init(KEY, X)


@pytest.mark.parametrize("name", NAMES["rem015"])
def test_rem015_init_returns_tracers_and_apply_raises(name):
    module = _module(FIXTURES, "rem015", name)
    variables = module.init(KEY, X)
    assert all(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(variables))
    with pytest.raises(jax.errors.UnexpectedTracerError):
        module.apply(variables, X)


@pytest.mark.parametrize(("rule", "name"), [(rule, name) for rule, names in NAMES.items() for name in names])
def test_the_quiet_twins_run(rule, name):
    module = _module(FIXTURES / "quiet", rule, name)
    assert module.apply(module.init(KEY, X), X).shape[0] == X.shape[0]


def test_rem009_across_modules_class_instance_and_class_of_instance_fail_and_the_lifted_twin_runs():
    with fixture_package(FIXTURES / "xmod_rem009", "model") as package:
        for name in ("FromClass", "ClassOfInstance"):
            with pytest.raises(TypeError, match="is not a valid JAX type"):
                getattr(package.model, name)().init(KEY, X)
        with pytest.raises(TypeError, match="Can't call __hash__ on modules that hold variables"):
            package.model.FromInstance().init(KEY, X)
        lifted = package.model.Lifted()
        assert lifted.apply(lifted.init(KEY, X), X).shape == X.shape
