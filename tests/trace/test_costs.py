"""--trace compiled-cost evidence (REM101-REM104) and per-site residual/policy reports.

Everything JAX runs in one child Python: ``XLA_FLAGS=--xla_disable_hlo_passes=cse_barrier_expander``
must be set before JAX starts a backend (as the trace worker does), and this process may already
have one. The child imports ``MODEL`` from a real file (source lines are how sites are matched) and
prints the results as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

MODEL = textwrap.dedent(
    """\
    import jax
    import jax.numpy as jnp
    import flax.linen as nn

    D, B = 128, 64


    def mlp_layer(p, x):
        W, b = p
        return jnp.tanh(x @ W + b)


    layer_ckpt = jax.checkpoint(mlp_layer)  # MLP_SITE


    def mlp_loss(ps, x):
        for p in ps:
            x = layer_ckpt(p, x)
        return jnp.mean(x**2)


    def block(p, x):  # pre-LN residual MLP block: its internals are worth recomputing
        W1, W2 = p
        mu, var = jnp.mean(x, -1, keepdims=True), jnp.var(x, -1, keepdims=True)
        h = (x - mu) * jax.lax.rsqrt(var + 1e-5)
        return x + jax.nn.gelu(h @ W1) @ W2


    block_ckpt = jax.checkpoint(block)  # DEEP_SITE
    block_nocse = jax.checkpoint(block, prevent_cse=False)  # NOCSE_SITE
    block_all = jax.checkpoint(block, policy=jax.checkpoint_policies.everything_saveable)  # ALL_SITE


    def stack(layer, ps, x):
        for p in ps:
            x = layer(p, x)
        return jnp.mean(x**2)


    def deep_loss(ps, x):
        return stack(block_ckpt, ps, x)


    def nocse_loss(ps, x):
        return stack(block_nocse, ps, x)


    def all_loss(ps, x):
        return stack(block_all, ps, x)


    def plain_loss(ps, x):
        return stack(block, ps, x)


    whole_loss = jax.checkpoint(plain_loss)  # WHOLE_SITE


    def dead_loss(ps, x):
        block_ckpt(ps[0], x)  # its value never reaches the loss: every variant lowers to one program
        return plain_loss(ps, x)


    class Block(nn.Module):
        @nn.compact
        def __call__(self, x):
            return x + nn.Dense(D)(jax.nn.gelu(nn.Dense(4 * D)(x)))


    class Model(nn.Module):
        @nn.compact
        def __call__(self, x):
            layer = nn.remat(Block)  # FLAX_SITE
            for _ in range(3):
                x = layer()(x)
            return x
    """
)
MARKERS = ["MLP_SITE", "DEEP_SITE", "NOCSE_SITE", "ALL_SITE", "WHOLE_SITE", "FLAX_SITE"]
SITES = {m: n for n, line in enumerate(MODEL.splitlines(), 1) for m in MARKERS if f"# {m}" in line}

CHILD = """
import importlib.util, json, sys
import jax, jax.numpy as jnp
from remat_lint.trace.worker.costs import Program, edits_for, fast_compile_options, memory_evidence, traced
from remat_lint.trace.worker import residuals
from remat_lint.trace.worker.residuals import site_report

path, sites = sys.argv[1], json.loads(sys.argv[2])
spec = importlib.util.spec_from_file_location("model", path)
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
code = open(path).read()
f32 = lambda *s: jax.ShapeDtypeStruct(s, jnp.float32)
x = f32(m.B, m.D)
mlp = ([(f32(m.D, m.D), f32(m.D)) for _ in range(3)], x)
deep = ([(f32(m.D, 4 * m.D), f32(4 * m.D, m.D)) for _ in range(4)], x)
model = m.Model()
variables = jax.eval_shape(model.init, jax.random.key(0), x)
flax_loss = lambda v, x: jnp.mean(model.apply(v, x) ** 2)

def default_and_fast(fun, args):
    lowered = jax.jit(jax.value_and_grad(fun)).lower(*args)
    compiled = [lowered.compile(), lowered.compile(compiler_options=fast_compile_options())]
    return [(c.memory_analysis().temp_size_in_bytes, c.cost_analysis()["flops"]) for c in compiled]

out = {
    "fast_compile": [default_and_fast(flax_loss, (variables, x)), default_and_fast(m.deep_loss, deep)],
    # the verdict first, then the table, as the worker runs them
    "mlp_evidence": memory_evidence(code, m.mlp_loss, mlp, {}, sites["MLP_SITE"], claim="recompute-for-nothing"),
    "mlp_report": site_report(m.mlp_loss, mlp, {}, code=code, site_lines=[sites["MLP_SITE"]]),
    "mlp_location": Program.trace(m.mlp_loss, mlp, {}).sites[0].location,
    "mlp_compiles": traced(m.mlp_loss, mlp, {}).compiles,
    "flax_report": site_report(flax_loss, (variables, x), {}, code=code, site_lines=[sites["FLAX_SITE"]]),
}
residuals.SMALL_PROGRAM = 0  # the flax model as if it were large; a new args tuple: a new Program, nothing compiled
large = (variables, x)
out.update({
    "flax_large": site_report(flax_loss, large, {}, code=code, site_lines=[sites["FLAX_SITE"]]),
    "flax_large_compiles": traced(flax_loss, large, {}).compiles,
    "REM101": memory_evidence(code, m.whole_loss, deep, {}, sites["WHOLE_SITE"]),
    "REM101_wrapped": memory_evidence(code, m.plain_loss, deep, {}, sites["WHOLE_SITE"], claim="recompute-for-nothing"),
    "REM103": memory_evidence(code, m.nocse_loss, deep, {}, sites["NOCSE_SITE"], claim="cse-lost"),
    "REM104": memory_evidence(code, m.all_loss, deep, {}, sites["ALL_SITE"], argnums=(0, 1), claim="saves-nothing"),
    "REM102_per_layer": memory_evidence(code, m.deep_loss, deep, {}, sites["DEEP_SITE"], claim="recompute-for-nothing"),
    "not_a_site": memory_evidence(code, m.deep_loss, deep, {}, 1),
    "not_scalar": memory_evidence(code, lambda ps, x: m.block_ckpt(ps[0], x), deep, {}, sites["DEEP_SITE"]),
})
dead = Program.trace(m.dead_loss, deep, {})
out["dead_rows"] = [dead.costs(edits_for(dead.sites, edit)).to_json() for edit in residuals.VARIANTS.values()]
out["dead_compiles"] = dead.compiles
print(json.dumps(out, default=lambda verdict: verdict.to_json()))
"""


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("trace_costs") / "model.py"
    path.write_text(MODEL)
    env = {**os.environ, "XLA_FLAGS": "--xla_disable_hlo_passes=cse_barrier_expander", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), json.dumps(SITES)],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=Path(__file__).parents[2],
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def policies(site: dict[str, Any]) -> dict[str, dict[str, float]]:
    return {row["policy"]: row for row in site["policies"]}


def test_per_layer_site_report(results: dict[str, Any]) -> None:
    sites = [s for s in results["mlp_report"] if not s.get("outside")]
    assert len(sites) == 1
    site = sites[0]
    assert site["line"] == SITES["MLP_SITE"] and site["file"].endswith("model.py")
    assert site["function"] == "mlp_layer" and site["calls"] == 3
    # each layer's output is the next checkpoint's input: two saved activations
    assert [r["shape"] for r in site["residuals"]] == ["f32[64,128]"] * 2
    assert all(r["bytes"] == 64 * 128 * 4 and "(mlp_layer)" in r["source"] for r in site["residuals"])
    table = policies(site)
    assert list(table) == [
        "none",
        "nothing_saveable",
        "dots_with_no_batch_dims_saveable",
        "dots_saveable",
        "everything_saveable",
    ]
    assert table["everything_saveable"]["temp_bytes"] >= table["nothing_saveable"]["temp_bytes"]
    assert table["nothing_saveable"]["flops"] > table["everything_saveable"]["flops"] * 1.2  # recomputes tanh(x@W+b)
    assert table["everything_saveable"]["flops"] == pytest.approx(table["none"]["flops"], rel=0.01)
    assert "within 10% of the lowest temp memory" in site["recommendation"]
    outside = [s for s in results["mlp_report"] if s.get("outside")]
    assert any(r["source"] == "from the argument ps[0][0]" for r in outside[0]["residuals"])


def test_site_line_without_source_is_the_checkpointed_function(results: dict[str, Any]) -> None:
    file, line = results["mlp_location"]
    assert file.endswith("model.py") and line == MODEL.splitlines().index("def mlp_layer(p, x):") + 1


def test_flax_remat_site_report(results: dict[str, Any]) -> None:
    site = next(s for s in results["flax_report"] if not s.get("outside"))
    assert (site["line"], site["function"], site["calls"]) == (SITES["FLAX_SITE"], "Block.__call__", 3)
    assert site["residuals"] and all("(Block.__call__)" in r["source"] for r in site["residuals"])
    table = policies(site)
    assert table["nothing_saveable"]["temp_bytes"] < table["none"]["temp_bytes"]
    assert table["everything_saveable"]["temp_bytes"] > table["nothing_saveable"]["temp_bytes"]
    assert site["recommendation"].startswith("policy=")


def test_residual_bytes_of_a_row_are_those_the_site_table_lists(results: dict[str, Any]) -> None:
    # the as-written row: every residual of the program (the site's and those outside checkpoints) but its arguments
    listed = sum(
        r["bytes"]
        for s in results["flax_report"]
        for r in s["residuals"]
        if not r["source"].startswith("from the argument")
    )
    site = next(s for s in results["flax_report"] if not s.get("outside"))
    assert policies(site)["nothing_saveable"]["residual_bytes"] == listed > 0
    assert policies(site)["none"]["residual_bytes"] > policies(site)["dots_saveable"]["residual_bytes"] > listed


def test_a_large_program_compiles_only_the_rows_within_the_slack_of_the_lowest_temp(results: dict[str, Any]) -> None:
    small_site = next(s for s in results["flax_report"] if not s.get("outside"))
    small = policies(small_site)
    site = next(s for s in results["flax_large"] if not s.get("outside"))
    large = policies(site)
    assert results["flax_large_compiles"] == 1  # the code as written, which is the nothing_saveable row
    assert {k: large["nothing_saveable"][k] for k in ("temp_bytes", "flops")} == {
        k: small["nothing_saveable"][k] for k in ("temp_bytes", "flops")
    }
    skipped = [name for name, row in large.items() if not row["compiled"]]
    assert skipped == ["none", "dots_with_no_batch_dims_saveable", "dots_saveable", "everything_saveable"]
    for name in skipped:  # residual bytes for every row, never a temp or FLOP estimate
        assert large[name] == {"policy": name, "residual_bytes": small[name]["residual_bytes"], "compiled": False}
        assert large[name]["residual_bytes"] > small["nothing_saveable"]["temp_bytes"] * 1.1
    assert site["compile_note"].startswith(
        "none, dots_with_no_batch_dims_saveable, dots_saveable, everything_saveable: not compiled"
    )
    assert site["recommendation"].startswith("policy=nothing_saveable: the fewest FLOPs among the compiled variants")
    # the small program compiled every row: dots_with_no_batch_dims_saveable has the temp of nothing_saveable and
    # fewer FLOPs, which residual bytes (5x) did not foresee; the large-program rule leaves it out
    assert small_site["recommendation"].startswith(
        "policy=dots_with_no_batch_dims_saveable: the fewest FLOPs among the variants"
    )


def test_variants_that_lower_to_one_program_share_one_compile(results: dict[str, Any]) -> None:
    # five rows with different edits (so different cache keys) for a checkpoint whose value is dead code
    assert len(results["dead_rows"]) == 5 and all(row == results["dead_rows"][0] for row in results["dead_rows"])
    assert results["dead_compiles"] == 1


def test_whole_loss_checkpoint_is_confirmed_under_value_and_grad(results: dict[str, Any]) -> None:
    for key in ("REM101", "REM101_wrapped"):
        result = results[key]
        assert result["status"] == "confirmed", result
        ev = result["evidence"]
        assert ev["as_written"]["flops"] > ev["with_fix"]["flops"] * 1.2  # the forward runs twice
        assert ev["as_written"]["temp_bytes"] >= ev["with_fix"]["temp_bytes"] * 0.99
        # under plain grad the primal forward is dead code: the same program either way
        assert ev["grad"]["as_written"]["flops"] == pytest.approx(ev["grad"]["with_fix"]["flops"], rel=0.01)
    assert "as_written_note" in results["REM101_wrapped"]["evidence"]


def test_prevent_cse_false_outside_scan_is_confirmed(results: dict[str, Any]) -> None:
    result = results["REM103"]
    assert result["status"] == "confirmed", result
    ev = result["evidence"]
    assert ev["fix"] == "prevent_cse=True" and ev["calls"] == 4
    assert ev["with_fix"]["temp_bytes"] < ev["as_written"]["temp_bytes"] * 0.5


def test_everything_saveable_is_confirmed(results: dict[str, Any]) -> None:
    result = results["REM104"]
    assert result["status"] == "confirmed", result
    assert result["evidence"]["as_written"]["temp_bytes"] > result["evidence"]["with_fix"]["temp_bytes"]


def test_useful_per_layer_checkpoint_is_refuted(results: dict[str, Any]) -> None:
    result = results["REM102_per_layer"]
    assert result["status"] == "refuted", result
    ev = result["evidence"]
    assert ev["as_written"]["temp_bytes"] < ev["with_fix"]["temp_bytes"] * 0.5
    assert result["reason"].startswith("The checkpoint saves memory.")


def test_unreachable_site_and_non_scalar_target_are_unconfirmed(results: dict[str, Any]) -> None:
    assert results["not_a_site"]["status"] == "unconfirmed"
    assert "no checkpoint from line 1" in results["not_a_site"]["reason"]
    assert results["not_scalar"]["status"] == "unconfirmed"
    assert "returns f32[64,128], not a scalar loss" in results["not_scalar"]["reason"]


def test_cost_programs_compiled_fast_measure_what_a_default_compile_does(results: dict[str, Any]) -> None:
    # LLVM's optimisation level 0 on CPU (costs.fast_compile_options): the same temp bytes and FLOPs
    for default, fast in results["fast_compile"]:
        assert default == fast


def test_no_program_is_compiled_twice(results: dict[str, Any]) -> None:
    # the table's five policies, with the code as written being its nothing_saveable row (a default
    # checkpoint: JAX reads policy None as nothing_saveable) and the fix its `none` row; the MLP has no
    # batched dot, so dots_saveable decides as dots_with_no_batch_dims_saveable on every equation: one
    # program. A checkpoint called per layer gets no grad-mode programs (no verdict reads them)
    (site,) = [s for s in results["mlp_report"] if not s.get("outside")]
    rows = policies(site)
    evidence = results["mlp_evidence"]["evidence"]
    assert evidence["as_written"] == {k: rows["nothing_saveable"][k] for k in ("temp_bytes", "flops")}
    assert evidence["with_fix"] == {k: rows["none"][k] for k in ("temp_bytes", "flops")}
    assert rows["dots_saveable"] == {**rows["dots_with_no_batch_dims_saveable"], "policy": "dots_saveable"}
    assert all(row["compiled"] for row in rows.values())  # a small program: every row
    assert site["calls"] > 1 and "grad" not in evidence
    assert results["mlp_compiles"] == 4
