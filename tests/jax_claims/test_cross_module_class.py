"""What REM202 says about another module's block lifted with `nn.remat`, run for real on
fixtures/xmod_class/: `nn.remat(block.__class__)`, `nn.remat(type(block))` and `nn.remat(Block)`
raise `TracerBoolConversionError` at init, as reported at model.py's calls; the quiet twins run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.jax_claims.test_cross_module import fixture_package

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
pytest.importorskip("flax.linen")

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "xmod_class"
KEY = jax.random.key(0)
X = jnp.ones((2, 4))


@pytest.fixture(scope="module")
def model():
    with fixture_package(ROOT, "model") as package:
        yield package.model


def test_rem202_the_lifted_class_of_an_imported_block_raises_at_the_reported_calls(model):
    with pytest.raises(jax.errors.TracerBoolConversionError):
        model.Backbone().init(KEY, X)
    with pytest.raises(jax.errors.TracerBoolConversionError):
        model.TypeBackbone().init(KEY, X, 0)
    with pytest.raises(jax.errors.TracerBoolConversionError):
        model.Direct().init(KEY, X)


def test_rem202_the_quiet_twins_run(model):
    for quiet in (model.StaticBackbone(), model.ScaledBackbone(), model.OffsetLeftAlone(), model.DirectScaled()):
        assert quiet.apply(quiet.init(KEY, X), X).shape == X.shape
    assert model.Backbone(checkpoint=False).init(KEY, X)  # without the checkpoint the offset is a Python int
