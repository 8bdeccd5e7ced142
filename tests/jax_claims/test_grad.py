"""What REM101, REM102, REM103 and REM301 tell users about checkpoints around grad and loops,
checked against the installed JAX: every number and claim in their messages, from compiled FLOPs
and temp bytes (``tests/jax_claims/grad_costs.py``, run once in a subprocess with the optimization barriers
kept, as on GPU/TPU), and the fixtures' code run for real."""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import lint
from tests.jax_claims.compiled_costs import KEEP_BARRIERS, measured

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def costs() -> dict[str, list[dict[str, float]]]:
    return measured("grad_costs.py")


def message(code: str, rule: str) -> str:
    findings = [f for f in lint(code, {rule}) if f.code == rule]
    assert len(findings) == 1, findings
    return findings[0].message


def flops_increase(pair: list[dict[str, float]], i: int = 1) -> float:
    return pair[i]["flops"] / pair[0]["flops"] - 1


def same_temp(a: dict[str, float], b: dict[str, float]) -> bool:
    return abs(a["temp"] - b["temp"]) <= 1024  # a few bytes of bookkeeping, no activations


# --- REM101: the whole differentiated function checkpointed ------------------------------------


def test_whole_function_checkpoint_is_a_no_op_under_grad(costs):
    msg = message("import jax\ng = jax.grad(jax.checkpoint(loss))", "REM101")
    assert "It saves nothing: compiled, the program has the same FLOPs and temp memory as without it" in msg
    assert "XLA:CPU with optimization barriers kept adds one 64-byte buffer" in msg
    for kind in ("grad", "jacrev"):
        without, checkpointed = costs[kind]
        assert checkpointed["flops"] == without["flops"], kind
        assert same_temp(checkpointed, without), kind


def test_whole_function_checkpoint_runs_the_forward_twice_under_value_and_grad(costs):
    for code in (
        "import jax\ng = jax.value_and_grad(jax.checkpoint(loss))",
        "import jax\nout, pull = jax.vjp(jax.checkpoint(loss), x)\ng = pull(1.0)",
    ):
        msg = message(code, "REM101")
        assert "the forward pass runs twice" in msg and "+33-35 % FLOPs" in msg and "no memory is saved" in msg
    for kind in ("value_and_grad", "vjp"):
        without, checkpointed = costs[kind]
        assert 0.325 <= flops_increase(costs[kind]) < 0.355, kind
        assert same_temp(checkpointed, without), kind


def test_whole_function_checkpoint_under_grad_with_aux_runs_the_forward_twice(costs):
    msg = message("import jax\ng = jax.grad(jax.checkpoint(loss), has_aux=True)", "REM101")
    assert "the forward pass runs twice, once for the auxiliary outputs" in msg and "+33-35 % FLOPs" in msg
    without, checkpointed = costs["grad has_aux"]
    assert 0.325 <= flops_increase(costs["grad has_aux"]) < 0.355
    assert same_temp(checkpointed, without)


def test_whole_function_checkpoint_under_forward_mode_and_hessian(costs):
    assert "forward mode keeps no residuals" in message("import jax\nj = jax.jacfwd(jax.checkpoint(loss))", "REM101")
    assert "saves no memory" in message("import jax\nh = jax.hessian(jax.checkpoint(loss))", "REM101")
    without, checkpointed = costs["jacfwd"]
    assert checkpointed == without
    without, checkpointed = costs["hessian"]
    assert checkpointed["temp"] >= without["temp"]


def test_a_policy_that_saves_matmuls_does_save_memory_on_a_whole_function(costs):
    without, checkpointed = costs["grad dots_saveable"]
    assert checkpointed["temp"] < 0.95 * without["temp"]  # why REM101 exempts such policies
    code = "import jax\ng = jax.grad(jax.checkpoint(loss, policy=jax.checkpoint_policies.dots_saveable))"
    assert lint(code, {"REM101"}) == []


# --- REM102: the last stage before the loss -----------------------------------------------------


def test_last_stage_checkpoint_saves_nothing(costs):
    base = "import jax\nimport jax.numpy as jnp\nhead = jax.checkpoint(head)\ndef loss(p, x):\n    return jnp.mean(head(p, body(p, x)))\n"
    assert "the checkpoint saves nothing (compiled: the same FLOPs and temp memory)" in message(
        base + "g = jax.grad(loss)", "REM102"
    )
    msg = message(base + "g = jax.value_and_grad(loss)", "REM102")
    assert (
        "(measured on JAX 0.10.2, last 2 of 6 blocks: +9 to +11 % FLOPs; temp unchanged with the loss inside the stage, "
        "-8 % with a squared error after it, +18 % with only a mean after it)"
    ) in msg
    without, checkpointed = costs["last stage grad"]
    assert checkpointed["flops"] == without["flops"] and same_temp(checkpointed, without)
    without, checkpointed = costs["last stage value_and_grad"]
    assert 0.10 <= flops_increase(costs["last stage value_and_grad"]) < 0.125
    assert same_temp(checkpointed, without)
    without, checkpointed = costs["last stage value_and_grad, tail outside"]  # the loss after the stage
    assert 0.08 <= flops_increase(costs["last stage value_and_grad, tail outside"]) < 0.10
    assert 0.91 <= checkpointed["temp"] / without["temp"] <= 0.93
    without, checkpointed = costs["last stage value_and_grad, mean outside"]
    assert 0.08 <= flops_increase(costs["last stage value_and_grad, mean outside"]) < 0.10
    assert 1.17 <= checkpointed["temp"] / without["temp"] < 1.19


def test_a_checkpointed_data_loss_plus_a_penalty_runs_its_forward_twice(costs):
    code = (
        "import jax\nimport jax.numpy as jnp\n@jax.checkpoint\ndef data_loss(p, b):\n    return jnp.mean(model(p, b))\n"
        "def l2(p):\n    return 1e-4 * jnp.sum(p ** 2)\ndef total(p, b):\n    return data_loss(p, b) + l2(p)\n"
        "step = jax.value_and_grad(total)\n"
    )
    msg = message(code, "REM102")
    assert "it is the whole forward pass, so the forward runs twice" in msg
    assert "(measured on JAX 0.10.2, 1 to 8 layers: +20 to +50 % FLOPs; temp memory at most one activation lower" in msg
    without, checkpointed = costs["penalty outside value_and_grad"]
    assert 0.335 <= flops_increase(costs["penalty outside value_and_grad"]) < 0.36
    assert 1.0 <= checkpointed["temp"] / without["temp"] < 1.09
    without, checkpointed = costs["whole stage value_and_grad, mean outside"]  # `jnp.mean(model(p, x))`
    assert 0.27 <= flops_increase(costs["whole stage value_and_grad, mean outside"]) < 0.28
    assert 1.40 <= checkpointed["temp"] / without["temp"] < 1.42


def test_a_whole_stage_whose_loss_needs_its_output_saves_one_activation_and_is_reported(costs):
    """REM102 used to exempt this case as "saves 18 % temp": that is one activation of the
    2-block stage (f32[128, 512]), and a deeper or tanh model saves less or nothing
    (tests/jax_claims/test_whole_model.py)."""
    from tests.jax_claims.grad_costs import B, D

    code = "import jax\nimport jax.numpy as jnp\nck = jax.checkpoint(model)\ndef loss(p, x, y):\n    return jnp.mean((ck(p, x) - y) ** 2)\n"
    assert "it is the whole forward pass, so the forward runs twice" in message(code + "g = jax.grad(loss)", "REM102")
    without, checkpointed = costs["whole stage grad, tail outside"]
    assert 0.27 <= flops_increase(costs["whole stage grad, tail outside"]) < 0.28
    assert abs((without["temp"] - checkpointed["temp"]) - B * 4 * D * 4) <= 1024


def test_last_stage_runs_twice_under_grad_when_the_tail_needs_its_output(costs):
    base = "import jax\nimport jax.numpy as jnp\nhead = jax.checkpoint(head)\ndef loss(p, x, y):\n    return jnp.mean({})\ng = jax.grad(loss)"
    msg = message(base.format("(head(p, body(p, x)) - y) ** 2"), "REM102")
    assert "the stage runs twice" in msg
    assert "+9 % FLOPs for -8 % temp after 4 blocks, +18 % FLOPs for -14 % temp after 1)" in msg
    assert "the checkpoint is a no-op when what follows is linear" in message(
        base.format("head(p, body(p, x)) * y"), "REM102"
    )
    assert 0.08 <= flops_increase(costs["last stage grad, tail outside"]) < 0.10
    without, checkpointed = costs["last stage grad, tail outside"]
    assert 0.91 <= checkpointed["temp"] / without["temp"] <= 0.93
    without, checkpointed = costs["last stage grad after 1 block, tail outside"]
    assert 0.17 <= flops_increase(costs["last stage grad after 1 block, tail outside"]) < 0.18
    assert 0.85 <= checkpointed["temp"] / without["temp"] < 0.87


def test_saved_residuals_suggest_a_saving_the_compiled_program_does_not_have():
    """REM102's doc: residual counts alone over-report the benefit of a last-stage checkpoint."""
    from jax._src.ad_checkpoint import saved_residuals  # not public in jax 0.10.2

    def stage(w, x):
        return jnp.tanh(jnp.tanh(x @ w) @ w)

    def chain(last):
        return lambda w, x: jnp.mean(last(w, stage(w, x)) ** 2)

    w, x = jnp.ones((4, 4)), jnp.ones((2, 4))
    assert len(saved_residuals(chain(jax.checkpoint(stage)), w, x)) < len(saved_residuals(chain(stage), w, x))


# --- REM103: prevent_cse=False outside a loop ---------------------------------------------------


def test_prevent_cse_false_outside_a_loop_loses_the_saving(costs):
    msg = message("import jax\nb = jax.checkpoint(block, prevent_cse=False)\nfor p in ps:\n    x = b(p, x)", "REM103")
    assert "saves no memory (measured on JAX 0.10.2: the same temp as no checkpoint) and still costs extra FLOPs" in msg
    none, default, no_cse = costs["per layer"]
    assert default["temp"] <= 0.2 * none["temp"]  # the doc: prevent_cse=True saves 80 %
    assert no_cse["temp"] == none["temp"]
    assert 0.13 <= flops_increase(costs["per layer"], 2) < 0.16  # the doc: about 14 % more FLOPs
    _, in_scan, in_scan_no_cse = costs["scan"]
    # The doc: inside a scan body it is harmless (same FLOPs, a little less temp).
    assert in_scan_no_cse["flops"] == in_scan["flops"] and in_scan_no_cse["temp"] <= in_scan["temp"]


# --- REM301: a scan over layers without a checkpointed body ---------------------------------------


def test_unchecked_scan_body_keeps_every_layer(costs):
    code = "import jax\ndef layer(c, p):\n    return c @ p, None\ndef f(ps, x):\n    return jax.lax.scan(layer, x, ps)[0].sum()\ng = jax.grad(f)"
    msg = message(code, "REM301")
    assert "5-7x the temp memory of a checkpointed body, which costs about +17 % FLOPs" in msg
    without, checkpointed, _ = costs["scan"]
    assert 5 <= without["temp"] / checkpointed["temp"] <= 7.5
    assert 0.15 <= flops_increase(costs["scan"]) < 0.19


# --- fixtures -------------------------------------------------------------------------------------


def test_flagged_fixture_code_is_valid_jax():
    """REM101 and REM102 are about cost, not errors: the flagged code runs and agrees with the
    unchecked gradients."""
    rem101 = runpy.run_path(str(ROOT / "fixtures/rem101_checkpoint_whole_loss.py"))
    ps, x, y = [jnp.eye(4) * 0.5] * 2, jnp.ones((3, 4)), jnp.zeros((3, 4))
    expected = jax.grad(rem101["mse"])(ps, x, y)
    for got in (rem101["grad_decorated"](ps, x, y), rem101["step_with_lambda"](ps, x, y)[1]):
        assert all(jnp.allclose(a, b) for a, b in zip(got, expected, strict=True))
    rem102 = runpy.run_path(str(ROOT / "fixtures/rem102_checkpoint_last_stage.py"))
    params = {"encoder": ps, "head": ps, "decoder": ps}
    assert rem102["train_step"](params, x, jnp.zeros(3, dtype=jnp.int32))[0].shape == ()
    assert set(rem102["regression_loss_grads"](params, x, y)) == {"encoder", "decoder", "head"}


def test_quiet_fixture_is_correct_code(capsys):
    runpy.run_path(str(ROOT / "fixtures/quiet/differentiation_and_loops.py"), run_name="__main__")
    assert capsys.readouterr().out.strip().endswith("ok")


BARRIER_BUFFER = """\
import json, jax, jax.numpy as jnp
def mlp(ws, x):
    for w in ws:
        x = jnp.tanh(x @ w)
    return jnp.mean(x ** 2)
out = {}
for n, b in ((8, 8), (256, 64)):
    ws, x = [jnp.ones((n, n)) * 0.01] * 2, jnp.ones((b, n))
    out[n] = [jax.jit(jax.grad(f)).lower(ws, x).compile().memory_analysis().temp_size_in_bytes for f in (mlp, jax.checkpoint(mlp))]
print(json.dumps(out))
"""


@pytest.mark.parametrize(("flags", "added"), [(KEEP_BARRIERS, 64), ("", 0)])
def test_rem101_grad_text_states_the_barrier_buffer_it_measures(flags: str, added: int) -> None:
    msg = message("import jax\ng = jax.grad(jax.checkpoint(loss))", "REM101")
    assert "XLA:CPU with optimization barriers kept adds one 64-byte buffer" in msg
    env = {**os.environ, "XLA_FLAGS": flags, "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run(
        [sys.executable, "-c", BARRIER_BUFFER], capture_output=True, text=True, env=env, timeout=600, check=False
    )
    assert proc.returncode == 0, proc.stderr
    for without, checkpointed in json.loads(proc.stdout.splitlines()[-1]).values():
        assert checkpointed - without == added
