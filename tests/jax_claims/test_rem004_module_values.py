"""REM004 through the value layer, run for real: each Module of fixtures/rem004_module_values.py
raises `TransformTargetError` at init, as reported; its quiet twins initialise and run."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
errors = pytest.importorskip("flax.errors")

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
KEY = jax.random.key(0)
X = jnp.ones((2, 4))


@pytest.mark.parametrize("name", ["FromFactory", "FromPartial", "Inherited", "OverTuple"])
def test_rem004_each_reported_module_raises_transform_target_error(name):
    module = runpy.run_path(str(FIXTURES / "rem004_module_values.py"))[name]()
    with pytest.raises(errors.TransformTargetError, match="Linen transformations must be applied to Modules"):
        module.init(KEY, X)


@pytest.mark.parametrize("name", ["FromFactory", "FromPartial", "ClassOfInstance", "OverClasses"])
def test_rem004_the_quiet_twins_run(name):
    module = runpy.run_path(str(FIXTURES / "quiet/rem004_module_values.py"))[name]()
    assert module.apply(module.init(KEY, X), X).shape[0] == X.shape[0]
