"""Discovery (REM401) on the programs of the other differentiation entry points: ``jax.vjp`` of a
non-scalar output (pulled back with a cotangent of the output's shape), Haiku's ``hk.transform`` apply
under ``jax.grad`` with ``hk.remat``, and ``eqx.filter_value_and_grad``. Each checkpoint wraps a whole
forward pass followed only by the pullback or a squared error: it saves no memory and costs FLOPs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.trace.test_discovery import PYTEST, project
from tests.trace_cases import lint

pytest.importorskip("jax")

FORWARD = """\
import jax
import jax.numpy as jnp


def forward(ws, x):
    for w in ws:
        x = jnp.tanh(x @ w)
    return x

"""


# One project, one --trace-run for the three entry points: a module and a test per entry point
# (the Haiku and Equinox ones only where the package is installed).
TABLE = FORWARD + 'WRAP = {"full": jax.checkpoint(forward), "none": forward}\n'
TABLE_TEST = """\
import jax
import jax.numpy as jnp

from pkg.table import WRAP


def test_pullback():
    out, pullback = jax.vjp(WRAP["full"], [jnp.ones((64, 64)) / 64] * 4, jnp.ones((128, 64)))
    assert pullback(jnp.ones_like(out))[1].shape == (128, 64)
"""
HAIKU = """\
import haiku as hk
import jax.numpy as jnp


def forward(x):
    mlp = hk.nets.MLP([64, 64, 4])
    return hk.remat(mlp)(x)


model = hk.transform(forward)


def loss(params, x, y):
    return jnp.mean((model.apply(params, None, x) - y) ** 2)
"""
HAIKU_TEST = """\
import jax
import jax.numpy as jnp

from pkg.hk_model import loss, model


def test_grads():
    x = jnp.ones((8, 16))
    assert jax.grad(loss)(model.init(jax.random.key(0), x), x, jnp.ones((8, 4))) is not None
"""
EQUINOX = """\
import equinox as eqx
import jax
import jax.numpy as jnp


forward = eqx.filter_checkpoint(lambda model, x: jax.vmap(model)(x))


@eqx.filter_value_and_grad
def loss(model, x, y):
    return jnp.mean((forward(model, x) - y) ** 2)
"""
EQUINOX_TEST = """\
import equinox as eqx
import jax
import jax.numpy as jnp

from pkg.eqx_model import loss


def test_grads():
    mlp = eqx.nn.MLP(16, 4, 64, 2, key=jax.random.key(0))
    value, grads = loss(mlp, jnp.ones((8, 16)), jnp.ones((8, 4)))
    assert value.shape == ()
"""


@pytest.fixture(scope="module")
def discovered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict]]:
    """Per module of the project: its findings (JSON) from one --trace-run."""
    files = {"pkg/table.py": TABLE, "tests/test_table.py": TABLE_TEST}
    if importlib.util.find_spec("haiku"):
        files |= {"pkg/hk_model.py": HAIKU, "tests/test_model.py": HAIKU_TEST}
    if importlib.util.find_spec("equinox"):
        files |= {"pkg/eqx_model.py": EQUINOX, "tests/test_eqx.py": EQUINOX_TEST}
    root = project(tmp_path_factory.mktemp("transforms"), files)
    proc = lint("--trace", "--no-cache", "--trace-run", PYTEST, "--output-format", "json", "pkg", cwd=root)
    by_module: dict[str, list[dict]] = {}
    for finding in json.loads(proc.stdout):
        by_module.setdefault(Path(finding["filename"]).name, []).append(finding)
    return by_module


def confirmed_rem401(findings: list[dict]) -> dict:
    [found] = [f for f in findings if f["code"] == "REM401"]
    assert found["trace"]["status"] == "confirmed", found["trace"]
    evidence = found["trace"]["evidence"]
    assert evidence["as_written"]["flops"] > evidence["without"]["flops"] * 1.2, evidence
    return found


def test_a_vjp_of_a_non_scalar_output_is_judged_with_a_cotangent_of_its_shape(discovered: dict[str, list[dict]]):
    """The checkpoint is picked from a table: the static pass sees the site but no misuse."""
    found = confirmed_rem401(discovered["table.py"])
    assert (found["code"], found["location"]["row"]) == ("REM401", 10)
    assert "program forward(<4 arrays>, f32[128,64], cotangent=f32[128,64])" in found["trace"]["reason"]
    # the batch grows with its cotangent: the differentiated input that traces at 16 times the batch
    assert "; at 16 times the batch (f32[2048,64]): temp " in found["message"], found["message"]


def test_a_haiku_model_checkpointed_whole_under_grad_of_apply_is_reported(discovered: dict[str, list[dict]]):
    pytest.importorskip("haiku")
    found = confirmed_rem401(discovered["hk_model.py"])
    assert (found["code"], found["location"]["row"]) == ("REM401", 7)
    assert "found by tracing in tests/test_model.py::test_grads" in found["trace"]["reason"]


def test_an_equinox_whole_forward_checkpoint_under_filter_value_and_grad_is_reported(discovered: dict[str, list[dict]]):
    pytest.importorskip("equinox")
    # The static pass sees this spelling (REM102 at the call): the discovery at the wrap, about the same
    # checkpoint, confirms it and is its related location.
    [found] = discovered["eqx_model.py"]
    assert (found["code"], found["location"]["row"]) == ("REM102", 11)
    assert [r["location"]["row"] for r in found["related"]] == [6]
    assert found["trace"]["status"] == "confirmed", found["trace"]
