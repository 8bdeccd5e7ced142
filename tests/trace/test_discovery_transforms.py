"""Discovery (REM401) on the programs of the other differentiation entry points: ``jax.vjp`` of a
non-scalar output (pulled back with a cotangent of the output's shape), Haiku's ``hk.transform`` apply
under ``jax.grad`` with ``hk.remat``, and ``eqx.filter_value_and_grad``. Each checkpoint wraps a whole
forward pass followed only by the pullback or a squared error: it saves no memory and costs FLOPs."""

from __future__ import annotations

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


def _discovered(root: Path) -> dict:
    proc = lint("--trace", "--no-cache", "--trace-run", PYTEST, "--output-format", "json", "pkg", cwd=root)
    [found] = [f for f in json.loads(proc.stdout) if f["code"] == "REM401"]
    assert found["trace"]["status"] == "confirmed", found["trace"]
    evidence = found["trace"]["evidence"]
    assert evidence["as_written"]["flops"] > evidence["without"]["flops"] * 1.2, evidence
    return found


def test_a_vjp_of_a_non_scalar_output_is_judged_with_a_cotangent_of_its_shape(tmp_path: Path):
    """The checkpoint is picked from a table: the static pass sees the site but no misuse."""
    root = project(
        tmp_path,
        {
            "pkg/model.py": FORWARD + 'WRAP = {"full": jax.checkpoint(forward), "none": forward}\n',
            "tests/test_model.py": """\
            import jax
            import jax.numpy as jnp

            from pkg.model import WRAP


            def test_pullback():
                out, pullback = jax.vjp(WRAP["full"], [jnp.ones((64, 64)) / 64] * 4, jnp.ones((128, 64)))
                assert pullback(jnp.ones_like(out))[1].shape == (128, 64)
            """,
        },
    )
    found = _discovered(root)
    assert (found["code"], found["location"]["row"]) == ("REM401", 10)
    assert "program forward(<4 arrays>, f32[128,64], cotangent=f32[128,64])" in found["trace"]["reason"]
    # the batch grows with its cotangent: the differentiated input that traces at 16 times the batch
    assert "; at 16 times the batch (f32[2048,64]): temp " in found["message"], found["message"]


def test_a_haiku_model_checkpointed_whole_under_grad_of_apply_is_reported(tmp_path: Path):
    pytest.importorskip("haiku")
    root = project(
        tmp_path,
        {
            "pkg/model.py": """\
            import haiku as hk
            import jax.numpy as jnp


            def forward(x):
                mlp = hk.nets.MLP([64, 64, 4])
                return hk.remat(mlp)(x)


            model = hk.transform(forward)


            def loss(params, x, y):
                return jnp.mean((model.apply(params, None, x) - y) ** 2)
            """,
            "tests/test_model.py": """\
            import jax
            import jax.numpy as jnp

            from pkg.model import loss, model


            def test_grads():
                x = jnp.ones((8, 16))
                assert jax.grad(loss)(model.init(jax.random.key(0), x), x, jnp.ones((8, 4))) is not None
            """,
        },
    )
    found = _discovered(root)
    assert (found["code"], found["location"]["row"]) == ("REM401", 7)
    assert "found by tracing in tests/test_model.py::test_grads" in found["trace"]["reason"]


def test_an_equinox_whole_forward_checkpoint_under_filter_value_and_grad_is_reported(tmp_path: Path):
    pytest.importorskip("equinox")
    root = project(
        tmp_path,
        {
            "pkg/model.py": """\
            import equinox as eqx
            import jax
            import jax.numpy as jnp


            forward = eqx.filter_checkpoint(lambda model, x: jax.vmap(model)(x))


            @eqx.filter_value_and_grad
            def loss(model, x, y):
                return jnp.mean((forward(model, x) - y) ** 2)
            """,
            "tests/test_model.py": """\
            import equinox as eqx
            import jax
            import jax.numpy as jnp

            from pkg.model import loss


            def test_grads():
                mlp = eqx.nn.MLP(16, 4, 64, 2, key=jax.random.key(0))
                value, grads = loss(mlp, jnp.ones((8, 16)), jnp.ones((8, 4)))
                assert value.shape == ()
            """,
        },
    )
    # The static pass sees this spelling (REM102 at the call): the discovery at the wrap, about the same
    # checkpoint, confirms it and is its related location.
    proc = lint("--trace", "--no-cache", "--trace-run", PYTEST, "--output-format", "json", "pkg", cwd=root)
    [found] = json.loads(proc.stdout)
    assert (found["code"], found["location"]["row"]) == ("REM102", 11)
    assert [r["location"]["row"] for r in found["related"]] == [6]
    assert found["trace"]["status"] == "confirmed", found["trace"]
