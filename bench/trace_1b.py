"""Benchmark: --trace cost analysis of a ~1.3B-parameter transformer from abstract inputs only.

A decoder-only transformer (Flax linen; 24 layers, d_model 2048, 16 heads, ffn 8192, vocab 32k,
untied embeddings) with ``nn.remat`` per layer. The weights are never allocated: the parameters come
from ``jax.eval_shape(model.init, ...)`` and the tokens are a ``jax.ShapeDtypeStruct``. Runs
one ``memory_evidence`` (as written vs the checkpoint removed, under value_and_grad; a checkpoint called per
layer gets no grad-mode programs) and then ``site_report`` (residual table and the five-policy comparison:
residual bytes of every row from the jaxpr, compiled temp and FLOPs only for the rows the recommendation
compares and those the verdict compiled) on one shared trace, in the worker's order; the code as written
is the ``nothing_saveable`` row and the fix the ``none`` row (compiled at LLVM opt level 0 on CPU:
``costs.fast_compile_options``), and prints wall times, peak RSS and the numbers. The floor, measured first in the same run, is one
``jit(value_and_grad(loss))`` trace+lower+compile of the same model (default options); the last line is
``total_s=<seconds> floor_s=<seconds>``.

    python bench/trace_1b.py [--layers 24] [--batch 4] [--seq 512] [--memory-budget 0.5]

float32 throughout: XLA:CPU upcasts bf16 arithmetic, which inflates bf16 temp sizes.
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_disable_hlo_passes=cse_barrier_expander")  # before JAX starts

import argparse
import platform
import resource
import time
from pathlib import Path

import flax.linen as nn
import jax
import jax.numpy as jnp

from remat_lint.trace.worker.budget import Search, parse_budget
from remat_lint.trace.worker.costs import memory_evidence, traced
from remat_lint.trace.worker.residuals import site_report

D_MODEL, HEADS, FFN, VOCAB = 2048, 16, 8192, 32_000


class Block(nn.Module):
    @nn.compact
    def __call__(self, x):
        h = nn.LayerNorm()(x)
        h = nn.SelfAttention(num_heads=HEADS, qkv_features=D_MODEL, use_bias=False)(
            h, mask=nn.make_causal_mask(x[..., 0])
        )
        x = x + h
        h = nn.Dense(FFN, use_bias=False)(nn.LayerNorm()(x))
        return x + nn.Dense(D_MODEL, use_bias=False)(jax.nn.gelu(h))


class Transformer(nn.Module):
    layers: int

    @nn.compact
    def __call__(self, tokens):
        x = nn.Embed(VOCAB, D_MODEL)(tokens)
        layer = nn.remat(Block)  # the checkpoint site
        for _ in range(self.layers):
            x = layer()(x)
        return nn.Dense(VOCAB, use_bias=False)(nn.LayerNorm()(x))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument(
        "--memory-budget", metavar="BUDGET", help="also plan the policies that fit BUDGET (trace/worker/budget.py)"
    )
    a = ap.parse_args()
    code = Path(__file__).read_text(encoding="utf-8")
    site_line = next(n for n, line in enumerate(code.splitlines(), 1) if "# the checkpoint site" in line)

    model = Transformer(a.layers)
    tokens = jax.ShapeDtypeStruct((a.batch, a.seq), jnp.int32)
    t0 = time.perf_counter()
    params = jax.eval_shape(model.init, jax.random.key(0), tokens)
    n_params = sum(leaf.size for leaf in jax.tree_util.tree_leaves(params))

    def loss(params, tokens):
        logits = model.apply(params, tokens)
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), tokens[..., None], -1))

    t1, c1 = time.perf_counter(), time.process_time()
    init_s = t1 - t0
    jax.jit(jax.value_and_grad(loss)).lower(params, tokens).compile()
    floor, floor_cpu = time.perf_counter() - t1, time.process_time() - c1
    args, kwargs = (params, tokens), {}  # the same objects: the report, the check and the plan share one traced program
    t1, c1 = time.perf_counter(), time.process_time()
    evidence = memory_evidence(
        code, loss, args, kwargs, site_line, claim="recompute-for-nothing"
    )  # verdicts first, as the worker
    t2 = time.perf_counter()
    report = site_report(loss, args, kwargs, code=code, site_lines=[site_line])
    t3 = time.perf_counter()
    plan = (
        Search(traced(loss, args, kwargs), [site_line]).choose(parse_budget(a.memory_budget))
        if a.memory_budget
        else None
    )
    t4, c4 = time.perf_counter(), time.process_time()

    print(f"jax {jax.__version__} backend={jax.default_backend()} XLA_FLAGS={os.environ.get('XLA_FLAGS')}")
    print(
        f"machine: {platform.machine()} {platform.processor() or ''} cores={os.cpu_count()} python {platform.python_version()}"
    )
    print(
        f"model: {a.layers} layers, d_model {D_MODEL}, ffn {FFN}, vocab {VOCAB}, {n_params / 1e9:.3f}B params "
        f"({n_params * 4 / 2**30:.2f} GiB f32, never allocated); tokens {a.batch}x{a.seq}"
    )
    for site in report:
        if site.get("outside"):
            res = site["residuals"]
            print(f"outside checkpoints: {len(res)} residuals, {sum(r['bytes'] for r in res) / 2**30:.2f} GiB")
            continue
        res = site["residuals"]
        print(
            f"site line {site['line']} ({site['function']}, {site['calls']} calls, policy {site['policy']}): "
            f"{len(res)} residuals, {sum(r['bytes'] for r in res) / 2**30:.2f} GiB; e.g. {res[0]['shape']} {res[0]['source']}"
        )
        for row in site["policies"]:
            measured = (
                f"temp {row['temp_bytes'] / 2**30:8.2f} GiB  {row['flops'] / 1e12:8.2f} TFLOP"
                if row["compiled"]
                else "not compiled"
            )
            print(f"  {row['policy']:34s} residuals {row['residual_bytes'] / 2**30:6.2f} GiB  {measured}")
        print(f"  {site['compile_note']}")
        print(f"  recommendation: {site['recommendation']}")
    print(f"memory_evidence (REM102 on the per-layer site): {evidence.status}: {evidence.reason}")
    if plan is not None:
        picked = plan.get("chosen") or plan["smallest"]
        print(
            f"--memory-budget {a.memory_budget} = {plan['budget_bytes'] / 2**30:.2f} GiB: fits={plan['fits']}, "
            f"{' '.join(s['chosen'] for s in plan['sites'])}: temp {picked['temp_bytes'] / 2**30:.2f} GiB, "
            f"{picked['flops'] / 1e12:.2f} TFLOP (today {plan['today']['temp_bytes'] / 2**30:.2f} GiB, "
            f"{plan['today']['flops'] / 1e12:.2f} TFLOP); {plan['compiles']} programs, {t4 - t3:.1f}s beyond the report"
        )
    print(
        f"wall: eval_shape(init) {init_s:.1f}s, memory_evidence {t2 - t1:.1f}s, site_report {t3 - t2:.1f}s, "
        f"floor (one jit(value_and_grad) compile) {floor:.1f}s; {traced(loss, args, kwargs).compiles} programs compiled "
        f"(the plan's included)"
    )
    print(f"cpu_s={c4 - c1:.1f} floor_cpu_s={floor_cpu:.1f} (process CPU time: the machine may be shared)")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    print(f"total_s={t4 - t1:.1f} floor_s={floor:.1f}")


if __name__ == "__main__":
    main()
