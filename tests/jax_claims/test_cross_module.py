"""What REM012, REM016 and REM003 say across modules, run for real on fixtures/xmod_static/: the
package is imported as its modules import each other, and each reported wrap or table entry
fails (or silently changes the result) the way its message says, called as model.py calls it; the
quiet twins run."""

from __future__ import annotations

import contextlib
import importlib
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
pytest.importorskip("flax.linen")

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "xmod_static"
KEY = jax.random.key(0)
X = jnp.ones((2, 4))
STATIC_ARGNUMS_ERROR = "can only take integer values greater than or equal to -len(args) and less than len(args)"


def _forget_pkg() -> None:
    """Other fixture projects are packages named ``pkg`` too."""
    for name in [n for n in sys.modules if n == "pkg" or n.startswith("pkg.")]:
        del sys.modules[name]


@contextlib.contextmanager
def fixture_package(root: Path, *modules: str) -> Iterator[ModuleType]:
    """The fixture project's package ``pkg`` under ``root``, imported as its modules import each
    other, with ``modules`` of it; forgotten afterwards."""
    _forget_pkg()
    sys.path.insert(0, str(root))
    try:
        for module in modules:
            importlib.import_module(f"pkg.{module}")
        yield sys.modules["pkg"]
    finally:
        sys.path.remove(str(root))
        _forget_pkg()


@pytest.fixture(scope="module")
def pkg():
    with fixture_package(ROOT, "layers", "model", "policies") as package:
        yield package


def _message(error: Exception) -> str:
    return str(error).replace("`", "")


def test_rem012_the_keyword_call_in_model_py_raises_value_error(pkg):
    with pytest.raises(ValueError) as block:
        pkg.model.Model().init({"params": KEY, "dropout": KEY}, X, deterministic=True)
    assert STATIC_ARGNUMS_ERROR in _message(block.value)
    with pytest.raises(ValueError) as function:
        pkg.layers.scale(X, twice=True)
    assert STATIC_ARGNUMS_ERROR in _message(function.value)
    assert jnp.array_equal(pkg.layers.scale(X, True), X * 2)  # positionally, as the message says


def test_rem016_the_keyword_from_model_py_is_dropped_with_a_runtime_warning(pkg):
    mlp = pkg.layers.remat_mlp()
    variables = mlp.init({"params": KEY}, X, True)
    with pytest.warns(RuntimeWarning, match='"deterministic" is\\(are\\) ignored'):
        train = mlp.apply(variables, X, deterministic=False, rngs={"dropout": KEY})
    assert jnp.array_equal(train, mlp.apply(variables, X, True))  # the default True stays: no dropout
    assert not jnp.array_equal(mlp.apply(variables, X, False, rngs={"dropout": KEY}), train)


def test_rem003_the_factory_read_by_key_in_model_py_raises_type_error_at_the_first_grad(pkg):
    layer = jax.checkpoint(jnp.sin, policy=pkg.policies.POLICIES["names"])
    with pytest.raises(TypeError, match="save_only_these_names\\(\\) got an unexpected keyword argument"):
        jax.grad(lambda x: layer(x).sum())(X)
    for name in ("dots", "nothing"):  # the quiet table: every entry works uncalled
        plain = jax.checkpoint(jnp.sin, policy=pkg.policies.PLAIN_POLICIES[name])
        jax.grad(lambda x, f=plain: f(x).sum())(X)


def test_the_quiet_twins_run(pkg):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # forwarded **kwargs that are empty: nothing dropped
        pkg.model.Forwarding().init({"params": KEY}, X)
    pkg.layers.PositionalBlock().init({"params": KEY, "dropout": KEY}, X, True)
    assert jnp.array_equal(pkg.layers.shift(X, 1.0), X + 1.0)
