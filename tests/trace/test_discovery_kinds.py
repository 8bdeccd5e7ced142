"""Discovery (REM401) for the spellings of issue 29 that test_discovery.py does not show: a policy
read from the environment that keeps everything, and the last stage checkpointed before the loss.
Two look alike and are not reported, as measured: a single linear map (nothing to recompute: the
FLOPs are the same; REM106 reports it statically) and a no-batch-dims policy under ``vmap`` with
per-example weights (every dot has a batch dimension: it saves as ``nothing_saveable`` does,
576 KiB -> 256 KiB of temp)."""

from __future__ import annotations

import json

import pytest

from tests.trace.test_discovery import PYTEST, by_line, project
from tests.trace_cases import lint

pytest.importorskip("jax")

MODEL = """\
    import os

    import jax
    import jax.numpy as jnp

    POLICY = getattr(jax.checkpoint_policies, os.environ.get("REMAT_LINT_TEST_POLICY", "everything_saveable"))


    def keep(w, x):
        return jnp.tanh(jnp.tanh(x @ w) @ w)


    def stage(w, x):
        return jnp.sin(jnp.tanh(x @ w) @ w)


    def linear(w, x):
        return x @ w


    def per_example(w, x):
        return jnp.cos(jnp.tanh(x @ w) @ w)


    keep_all = jax.checkpoint(keep, policy=POLICY)  # line 25: the environment's policy keeps everything
    last = jax.checkpoint(stage)  # line 26: the last stage, followed only by the loss
    lin = jax.checkpoint(linear)  # line 27: a single linear map
    no_batch = jax.checkpoint(per_example, policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)


    def keep_all_loss(ws, x):
        for w in ws:
            x = keep_all(w, x)
        return jnp.mean(x**2)


    def staged_loss(ws, x):
        for w in ws[:-1]:
            x = jnp.tanh(x @ w)
        return jnp.mean(last(ws[-1], x) ** 2)


    def linear_loss(ws, x):
        for w in ws:
            x = jnp.tanh(lin(w, x))
        return jnp.mean(x**2)


    def vmapped_loss(ws, xs):
        for w in ws:
            xs = jax.vmap(no_batch)(w, xs)  # per-example weights: every dot has a batch dimension
        return jnp.mean(xs**2)
    """

TESTS = """\
    import jax
    import jax.numpy as jnp

    from pkg import model

    WS = [jnp.ones((64, 64)) / 64] * 4


    def test_keep_all():
        assert jax.grad(model.keep_all_loss)(WS, jnp.ones((32, 64)))[0].shape == (64, 64)


    def test_staged():
        assert jax.grad(model.staged_loss)(WS, jnp.ones((32, 64)))[0].shape == (64, 64)


    def test_linear():
        assert jax.grad(model.linear_loss)(WS, jnp.ones((32, 64)))[0].shape == (64, 64)


    def test_vmapped():
        ws = [jnp.ones((8, 64, 64)) / 64] * 4
        assert jax.grad(model.vmapped_loss)(ws, jnp.ones((8, 32, 64)))[0].shape == (8, 64, 64)
    """


@pytest.fixture(scope="module")
def found(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    root = project(tmp_path_factory.mktemp("kinds"), {"pkg/model.py": MODEL, "tests/test_model.py": TESTS})
    proc = lint("--trace", "--no-cache", "--trace-run", PYTEST, "--output-format", "json", "pkg", cwd=root)
    assert proc.returncode == 1, proc.stderr
    return json.loads(proc.stdout)


def _at(found: list[dict], line: int) -> dict:
    (finding,) = [f for f in found if f["location"]["row"] == line]
    return finding


def test_a_policy_from_the_environment_that_keeps_everything_is_reported(found: list[dict]):
    finding = _at(found, 25)
    assert finding["code"] == "REM401" and finding["trace"]["found_by"] == "trace"
    assert finding["trace"]["reason"].startswith("found by tracing in tests/test_model.py::test_keep_all, program ")
    evidence = finding["trace"]["evidence"]  # measured 120.24 KiB as written vs 48.01 KiB without it
    assert evidence["as_written"]["temp_bytes"] > 2 * evidence["without"]["temp_bytes"]


def test_the_last_stage_checkpointed_before_the_loss_is_reported(found: list[dict]):
    finding = _at(found, 26)
    assert finding["code"] == "REM401" and finding["trace"]["found_by"] == "trace"
    evidence = finding["trace"]["evidence"]  # measured 4.24 vs 3.72 MFLOP, temp 24.02 vs 24.01 KiB
    assert evidence["as_written"]["flops"] > 1.1 * evidence["without"]["flops"]
    assert evidence["as_written"]["temp_bytes"] >= evidence["without"]["temp_bytes"]


def test_look_alikes_that_cost_nothing_or_save_memory_are_not_discovered(found: list[dict]):
    lines = by_line(found)
    assert lines[27] == ["REM106"]  # the static finding only: the linear map's FLOPs are the same
    assert 28 not in lines  # the no-batch-dims policy under vmap saves memory
    assert sorted(lines) == [25, 26, 27]
