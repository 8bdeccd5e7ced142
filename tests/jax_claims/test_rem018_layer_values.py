"""REM018 through the value layer, run for real: each Module of fixtures/rem018_layer_values.py
that is reported raises `PartitioningUnspecifiedError` at init; the quiet twins initialise."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
errors = pytest.importorskip("flax.errors")

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "rem018_layer_values.py"
KEY = jax.random.key(0)
X = jnp.ones((2, 4))
PARTITION_ERROR = 'Trying to transform a Partitioned variable but "partition_name" is not specified in metadata_params'


@pytest.mark.parametrize("name", ["FromPartial", "FromFactory", "OverClasses"])
def test_rem018_each_reported_scan_raises_at_init(name):
    module = runpy.run_path(str(FIXTURE))[name]()
    with pytest.raises(errors.PartitioningUnspecifiedError, match=PARTITION_ERROR):
        module.init(KEY, X)


@pytest.mark.parametrize("name", ["PlainFromPartial", "PlainFromFactory", "Either"])
def test_rem018_the_quiet_twins_initialise(name):
    module = runpy.run_path(str(FIXTURE))[name]()
    assert module.apply(module.init(KEY, X), X).shape == X.shape
