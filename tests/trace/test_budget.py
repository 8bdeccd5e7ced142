"""--memory-budget (trace/worker/budget.py): budget parsing, the CLI, and the search against exhaustive search.

The search runs in one child Python (``XLA_FLAGS=--xla_disable_hlo_passes=cse_barrier_expander`` must
be set before JAX starts, as the trace worker does). On the demo's loss, on a two-site Flax linen
MLP stack, on a Flax NNX transformer block (tests/trace/budget_nnx_block.py) and on per-layer checkpoints
nested in a whole-body one, every assignment of candidates is compiled (the program's cache shares
the compiles the search made) and, for budgets of 0.3, 0.4, 0.5 and 0.8 of the no-checkpoint peak, the
chosen assignment must fit when compiled with FLOPs within 2 % of the best that fits; where nothing
fits, no assignment may fit.
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

from remat_lint.trace.worker.budget import CONFIRMATIONS, Budget, parse_budget

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "fixtures" / "demo"
FLAGS = "--xla_disable_hlo_passes=cse_barrier_expander"

STACK = textwrap.dedent(
    """\
    import flax.linen as nn
    import jax
    import jax.numpy as jnp


    class Up(nn.Module):
        @nn.compact
        def __call__(self, x):
            return jax.nn.gelu(nn.Dense(64)(nn.LayerNorm()(x)))


    class Down(nn.Module):
        @nn.compact
        def __call__(self, h):
            return nn.Dense(16)(jnp.tanh(nn.Dense(64)(h)))


    class Stack(nn.Module):
        @nn.compact
        def __call__(self, x):
            up = nn.remat(Up)
            down = nn.remat(Down, policy=jax.checkpoint_policies.dots_saveable, prevent_cse=False)
            for _ in range(2):
                x = x + down()(up()(x))
            return jnp.mean(x**2)
    """
)

CHILD = textwrap.dedent(
    """\
    import itertools, json, sys
    import jax, jax.numpy as jnp
    from jax.ad_checkpoint import checkpoint_name
    sys.path[:0] = sys.argv[1:4]
    exec(sys.argv[4], {"__name__": "offload"})  # OFFLOAD below, in a namespace of its own
    import budget_nnx_block, model, stack
    from remat_lint.trace.worker.budget import Search, parse_budget
    from remat_lint.trace.worker.costs import Program

    S = jax.ShapeDtypeStruct
    f32 = jnp.float32
    demo = Program.trace(model.loss, ([(S((64, 256), f32), S((256, 64), f32))] * 4, S((16, 64), f32), S((16, 64), f32)), {}, (0, 1, 2))
    m = stack.Stack()
    x = S((32, 16), f32)
    params = jax.eval_shape(m.init, jax.random.key(0), x)
    mlp = Program.trace(lambda p, x: m.apply(p, x), (params, x), {}, (0, 1))
    block = Program.trace(budget_nnx_block.loss, (budget_nnx_block.state, budget_nnx_block.x), {}, (0, 1))

    def layer(x, w_in, w_out):
        return x + jnp.tanh(checkpoint_name(jax.nn.gelu(x @ w_in), "h")) @ w_out

    def body(params, x):  # per-layer checkpoints nested in a whole-body one: sites that interact
        for w_in, w_out in params:
            x = jax.checkpoint(layer)(x, w_in, w_out)
        return x

    nested = Program.trace(lambda params, x: jnp.mean(jax.checkpoint(body)(params, x) ** 2),
                           ([(S((64, 256), f32), S((256, 64), f32))] * 3, S((16, 64), f32)), {}, (0, 1))
    def alternating(params, x):  # a named gelu layer, then a sin layer under dots_saveable, in a whole-body checkpoint
        for i, (w_in, w_out) in enumerate(params):
            sin_layer = jax.checkpoint(lambda x, a, b: jnp.sin(x @ a) @ b, policy=jax.checkpoint_policies.dots_saveable)
            x = (jax.checkpoint(layer) if i % 2 == 0 else sin_layer)(x, w_in, w_out)
        return x

    interleaved = Program.trace(lambda params, x: jnp.mean(jax.checkpoint(alternating)(params, x) ** 2),
                                ([(S((64, 128), f32), S((128, 64), f32)), (S((64, 256), f32), S((256, 64), f32))], S((16, 64), f32)),
                                {}, (0, 1))
    out = {}
    for name, program in (("demo", demo), ("stack", mlp), ("nnx", block), ("nested", nested), ("interleaved", interleaved)):
        search = Search(program, [None] * len(program.sites))
        compiles = len(search.programs)
        plans, confirmations = {}, {}
        for b in ("0.3", "0.4", "0.5", "0.8"):
            plans[b] = search.choose(parse_budget(b))
            confirmations[b] = len(search.programs) - compiles - sum(confirmations.values())
        every = [(tuple(o.candidate.name for o in choice), search.program.costs(search.edits(choice)).to_json())
                 for choice in itertools.product(*search.options)]
        out[name] = {"sites": len(search.sites), "candidates": [len(row) - 1 for row in search.options],
                     "compiles": compiles, "confirmations": confirmations, "plans": plans, "every": every}
    print(json.dumps(out))
    """
)


# What offload is on XLA:CPU (test_offload_is_a_candidate_only_where_the_backend_has_host_memory), run by CHILD first.
OFFLOAD = textwrap.dedent(
    """\
    import jax, jax.numpy as jnp
    from jax.ad_checkpoint import checkpoint_name
    from remat_lint.trace.worker.budget import candidates, host_memory, Search, parse_budget
    from remat_lint.trace.worker.costs import Program

    def block(x, w):
        return jnp.sin(checkpoint_name(jnp.tanh(x @ w), "h") @ w.T)

    def loss(w, x):
        return jnp.sum(jax.checkpoint(block)(x, w) ** 2)

    S = jax.ShapeDtypeStruct
    program = Program.trace(loss, (S((32, 32), jnp.float32), S((8, 32), jnp.float32)), {}, 0)
    plan = Search(program, [None]).choose(parse_budget("0.5"))
    offload = [c for c in candidates(program.sites[0], "pinned_host") if c.name.startswith("save_and_offload")]
    source = offload[0].policy
    policy = eval(source, {"jax": jax})
    x = jnp.ones((8, 32)); w = jnp.eye(32)
    same = jax.grad(loss)(w, x).tolist() == jax.grad(lambda w, x: jnp.sum(jax.checkpoint(block, policy=policy)(x, w) ** 2))(w, x).tolist()
    print(repr(host_memory()), [o["candidate"] for o in plan["site_options"][0]["options"]], plan["offload_note"], sep="\\n")
    print(offload[0].name, source, same, sep="\\n")
    """
)


@pytest.fixture(scope="module")
def child_output(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The child's last seven lines: OFFLOAD's six, then the search's JSON (one JAX start for both)."""
    tmp = tmp_path_factory.mktemp("budget")
    (tmp / "stack.py").write_text(STACK, encoding="utf-8")
    env = {**os.environ, "XLA_FLAGS": FLAGS, "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(DEMO), str(tmp), str(ROOT / "tests" / "trace"), OFFLOAD],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()[-7:]


@pytest.fixture(scope="module")
def searched(child_output: list[str]) -> dict[str, Any]:
    return json.loads(child_output[-1])


@pytest.fixture(scope="module")
def offload_probe(child_output: list[str]) -> list[str]:
    return child_output[:-1]


@pytest.mark.parametrize("name", ["demo", "stack", "nnx", "nested", "interleaved"])
@pytest.mark.parametrize("budget", ["0.3", "0.4", "0.5", "0.8"])
def test_choice_fits_and_is_within_2_percent_of_exhaustive_best(
    searched: dict[str, Any], name: str, budget: str
) -> None:
    case = searched[name]
    plan = case["plans"][budget]
    limit = plan["budget_bytes"]
    assert limit == int(plan["no_checkpoint"]["temp_bytes"] * float(budget))
    fitting = [costs for _, costs in case["every"] if costs["temp_bytes"] <= limit]
    if not plan["fits"]:
        assert not fitting, f"the search found nothing under {limit} B but these fit: {fitting}"
        assert plan["smallest"]["temp_bytes"] > limit
        return
    best = min(costs["flops"] for costs in fitting)
    assert plan["chosen"]["temp_bytes"] <= limit
    assert plan["chosen"]["flops"] <= best * 1.02
    chosen = tuple(site["chosen"] for site in plan["sites"])
    assert [c for a, c in case["every"] if tuple(a) == chosen] == [plan["chosen"]]  # the report names what was compiled


def test_cases_are_the_sizes_exhaustive_search_allows(searched: dict[str, Any]) -> None:
    assert searched["demo"]["sites"] == 1 and searched["demo"]["candidates"] == [
        5
    ]  # none, 3 policies, names ('hidden')
    assert searched["stack"]["sites"] == 2 and searched["stack"]["candidates"] == [3, 4]  # + prevent_cse=True at Down
    # 0.3 and 0.4 of the stack's no-checkpoint peak are below what any assignment reaches: the "nothing fits" path
    assert [p["fits"] for p in searched["stack"]["plans"].values()] == [False, False, True, True]
    # nnx.remat(Attention.__call__): none, nothing_saveable, dots_saveable; jax.checkpoint(self.mlp): none, 2 policies, names ('up')
    assert searched["nnx"]["sites"] == 2 and searched["nnx"]["candidates"] == [3, 4]
    assert [p["fits"] for p in searched["nnx"]["plans"].values()] == [False, False, True, True]


def test_search_compiles_one_program_per_candidate_plus_confirmations(searched: dict[str, Any]) -> None:
    for case in searched.values():
        # today, one per candidate, no checkpoint at all (one of them for a single site)
        assert case["compiles"] <= 1 + sum(case["candidates"]) + 1
        # per budget: CONFIRMATIONS, and where nothing fits the assignment predicted smallest
        assert all(n <= CONFIRMATIONS + 1 for n in case["confirmations"].values()), case["confirmations"]


def test_nested_sites_the_additive_prediction_misses_are_confirmed(searched: dict[str, Any]) -> None:
    """The whole-body checkpoint and the per-layer ones interact: at 0.4 the assignments predicted to fit
    with the fewest predicted FLOPs do not fit when compiled (the search used to spend its three
    confirmations on them and report that nothing fits, though single-site changes it had compiled fit)."""
    plan = searched["nested"]["plans"]["0.4"]
    assert plan["fits"] and [s["chosen"] for s in plan["sites"]] == ["none", "save_only_these_names('h')"]


def test_the_search_compiles_in_order_of_flops_until_the_cheapest_fit_is_proven(searched: dict[str, Any]) -> None:
    """Three sites that interact: at 0.8 the cheapest fit is none of the first three assignments predicted
    cheapest (the search used to stop after three confirmations and report that nothing fits)."""
    plan = searched["interleaved"]["plans"]["0.8"]
    assert plan["fits"] and plan["proven"]


@pytest.mark.parametrize("name", ["stack", "nnx"])
def test_budgets_pick_different_policies(searched: dict[str, Any], name: str) -> None:
    chosen = {b: tuple(s["chosen"] for s in p["sites"]) for b, p in searched[name]["plans"].items() if p["fits"]}
    assert len(set(chosen.values())) >= 2, chosen


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("12GiB", Budget("12GiB", bytes=12 * 2**30)),
        ("500MB", Budget("500MB", bytes=500 * 10**6)),
        ("1048576", Budget("1048576", bytes=1048576)),
        ("0.5", Budget("0.5", fraction=0.5)),
        ("50%", Budget("50%", fraction=0.5)),
        ("1", Budget("1", fraction=1.0)),
    ],
)
def test_parse_budget(text: str, expected: Budget) -> None:
    assert parse_budget(text) == expected


@pytest.mark.parametrize("text", ["", "half", "12 parsecs", "0", "150%", "1.5", "-1GiB"])
def test_parse_budget_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="--memory-budget"):
        parse_budget(text)


def test_cli_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    from remat_lint.cli.command import main

    assert main(["--memory-budget", "0.5", str(DEMO)]) == 2
    assert "--memory-budget needs --trace" in capsys.readouterr().err
    assert main(["--trace", "--memory-budget", "lots", str(DEMO)]) == 2
    assert "expected bytes (12GiB, 500MB, 1048576) or a fraction" in capsys.readouterr().err


def test_text_table_says_what_was_chosen_and_where_the_numbers_come_from() -> None:
    from types import SimpleNamespace

    from remat_lint.trace.worker.budget import format_plans

    rep = {
        "budget": "0.3",
        "budget_bytes": 40_000,
        "fits": False,
        "today": {"temp_bytes": 41_000, "flops": 1.48e7},
        "smallest": {"temp_bytes": 41_000, "flops": 1.48e7},
        "no_checkpoint": {"temp_bytes": 135_000, "flops": 1.26e7},
        "compiles": 4,
        "candidates": 3,
        "backend": "cpu",
        "sites": [
            {
                "line": 18,
                "function": "mlp_block",
                "today": "nothing_saveable (default)",
                "chosen": "as written",
                "policy": None,
                "residual_bytes_saved": 0,
                "flops_added": 0.0,
            }
        ],
    }
    text = format_plans(
        [SimpleNamespace(path="model.py", target="loss(f32[16,64])", report=rep)],
        "--xla_disable_hlo_passes=cse_barrier_expander",
    )
    assert "model.py: --memory-budget 0.3 for loss(f32[16,64]): 39.1 KiB, 0.3 of the no-checkpoint peak temp" in text
    assert "     18  mlp_block " in text and " as written " in text
    assert "  smallest found    40.0 KiB     1.48e+07" in text
    assert "  nothing fits 39.1 KiB: the smallest peak temp reached is 40.0 KiB" in text
    assert "numbers from XLA:CPU with --xla_disable_hlo_passes=cse_barrier_expander: a GPU/TPU compiles" in text
    gpu = format_plans(
        [SimpleNamespace(path="model.py", target="loss", report={**rep, "backend": "gpu", "budget": "12GiB"})], ""
    )
    assert "XLA:CPU" not in gpu and "of the no-checkpoint peak" not in gpu


@pytest.mark.parametrize("proven", [True, False])
def test_a_choice_the_compile_limit_left_unproven_says_so(proven: bool) -> None:
    from types import SimpleNamespace

    from remat_lint.trace.worker.budget import format_plans

    costs = {"temp_bytes": 30_000, "flops": 1.3e7}
    rep = {
        "budget": "0.5",
        "budget_bytes": 40_000,
        "fits": True,
        "proven": proven,
        "today": costs,
        "chosen": costs,
        "no_checkpoint": {"temp_bytes": 80_000, "flops": 1.2e7},
        "compiles": 30,
        "candidates": 12,
        "backend": "gpu",
        "sites": [],
    }
    text = format_plans([SimpleNamespace(path="model.py", target="loss", report=rep)], "")
    said = (
        f"the search stopped at its limit of {CONFIRMATIONS} confirming compiles: an assignment predicted cheaper"
        " was not compiled, so the choice is not proven the cheapest that fits"
    )
    assert (said in text) is not proven, text


def test_a_plan_for_a_sharded_program_says_the_budget_is_per_device() -> None:
    from types import SimpleNamespace

    from remat_lint.trace.worker.budget import format_plans

    costs = {"temp_bytes": 30_000, "flops": 1.3e7}
    rep = {
        "budget": "12GiB",
        "budget_bytes": 12 * 2**30,
        "fits": True,
        "today": costs,
        "chosen": costs,
        "no_checkpoint": costs,
        "compiles": 3,
        "candidates": 2,
        "backend": "gpu",
        "sites": [],
    }
    plans = [SimpleNamespace(path="model.py", target="loss", report={**rep, "devices": 8})]
    assert (
        "  temp and FLOPs are per device: the program's inputs are sharded over 8 devices (collectives' cost on a"
        " real interconnect is not measured); the budget applies to each device" in format_plans(plans, "")
    )
    assert "per device" not in format_plans([SimpleNamespace(path="model.py", target="loss", report=rep)], "")


def test_offload_is_a_candidate_only_where_the_backend_has_host_memory(offload_probe: list[str]) -> None:
    """On XLA:CPU (the test's backend) ``save_and_offload_only_these_names`` compiles as saved, so it is
    no candidate and the plan says why; given a host memory kind, a site declaring names offloads them."""
    memory, options, note, name, source, same = offload_probe
    assert memory == "None"
    assert not any("offload" in o for o in options.split(","))
    assert note.startswith(
        "save_and_offload_only_these_names was not considered: on XLA:CPU device memory is host memory"
    )
    assert name == "save_and_offload_only_these_names('h')"
    assert source == (
        "jax.checkpoint_policies.save_and_offload_only_these_names(names_which_can_be_saved=[], "
        "names_which_can_be_offloaded=['h'], offload_src='device', offload_dst='pinned_host')"
    )
    assert same == "True"  # the written policy runs, with the gradient of the program as written
