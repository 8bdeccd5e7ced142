"""--trace verdicts judged in the test process (remat_lint/trace/worker/evidence.py): the status and the
one-line reason a user reads for each branch of each kind of evidence.

tests/trace/test_verdicts.py drives the same branches end to end through a worker process; these
tests call the judges directly (on real traces of a small module, or on runs whose recorded facts
are written by hand), so that a mutation run sees them fail.
"""

from __future__ import annotations

import importlib.util
import textwrap
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from remat_lint.trace.checks import EVIDENCE, TraceCheck  # noqa: E402
from remat_lint.trace.protocol import Item  # noqa: E402
from remat_lint.trace.worker import evidence as ev  # noqa: E402
from remat_lint.trace.worker.build import Prepared  # noqa: E402

SOURCE = textwrap.dedent(
    """\
    import jax
    import jax.numpy as jnp
    from jax.ad_checkpoint import checkpoint_name


    def body(x):
        jax.debug.print("x {}", x)
        return jnp.sin(x) * 2.0


    block = jax.checkpoint(body)


    def loss(x):
        return block(x).sum()


    def boom(x):
        raise ValueError("boom\\nsecond line")


    bad = jax.checkpoint(boom)


    def bad_loss(x):
        return bad(x).sum()


    def plain(x):
        return jnp.sin(x).sum()


    named = jax.checkpoint(lambda x: jnp.sin(checkpoint_name(jnp.sin(x), "kept")),
                           policy=jax.checkpoint_policies.save_only_these_names("kept"))


    def named_loss(x):
        return named(x).sum()
    """
)
LINE = {
    name: SOURCE.splitlines().index(text) + 1
    for name, text in {
        "print": '    jax.debug.print("x {}", x)',
        "block": "block = jax.checkpoint(body)",
        "raise": '    raise ValueError("boom\\nsecond line")',
        "bad": "bad = jax.checkpoint(boom)",
        "named": 'named = jax.checkpoint(lambda x: jnp.sin(checkpoint_name(jnp.sin(x), "kept")),',
    }.items()
}
F32 = (jax.ShapeDtypeStruct((3,), jnp.float32),)


def item(
    line: int,
    check: TraceCheck | None = None,
    *,
    end_line: int | None = None,
    on_site: bool = False,
    data: dict[str, Any] | None = None,
) -> Item:
    return Item(
        id=0, code="REM000", line=line, end_line=end_line or line, on_site=on_site, check=check, data=data or {}
    )


RAISES_BOOM = TraceCheck("exception", raises=(("ValueError", "boom"),), refutes=True)


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, ev.Run]]:
    """Each target of SOURCE traced (forward and grad) as the worker traces it."""
    path = tmp_path_factory.mktemp("evidence") / "mod.py"
    path.write_text(SOURCE)
    spec = importlib.util.spec_from_file_location("evidence_mod", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    filtering = jax.config.jax_traceback_filtering
    jax.config.update("jax_traceback_filtering", "off")  # as the worker sets it: checkpoint frames stay on tracebacks
    try:
        runs = {}
        for name in ("loss", "bad_loss", "plain", "named_loss"):
            fun = getattr(module, name)
            run = ev.Run(
                name, str(path), lambda fun=fun, name=name: Prepared(f"{name}(f32[3])", fun, F32, {}, True, "test")
            )
            run.execute()
            runs[name] = run
        yield runs
    finally:
        jax.config.update("jax_traceback_filtering", filtering)


def by_hand(**recorded: Any) -> ev.Run:
    """A run whose recorded facts (and cached compiled executions or residuals) are given."""
    cached = {k: recorded.pop(k) for k in ("compiled_executions", "residuals") if k in recorded}
    run = ev.Run("loss(f32[8])", "mod.py", build=lambda: None, **recorded)  # type: ignore[arg-type, return-value]
    run.__dict__.update(cached)
    return run


# --- exceptions -------------------------------------------------------------------------------------


def test_the_predicted_exception_from_the_flagged_checkpoint_confirms(traced):
    run = traced["bad_loss"]
    assert ev.judge_error(item(LINE["bad"], RAISES_BOOM), run, SOURCE).to_json() == {
        "status": "confirmed",
        "reason": "ValueError: boom (forward: bad_loss(f32[3]))",
        "evidence": {
            "target": "bad_loss(f32[3])",
            "stage": "forward",
            "exception": "ValueError: boom",
            "lines": [LINE["bad"] + 4, LINE["raise"]],
        },
    }
    # the flagged line itself raised inside the checkpoint
    assert ev.judge_error(item(LINE["raise"], RAISES_BOOM), run, SOURCE).status == "confirmed"


def test_the_predicted_exception_from_another_checkpoint_leaves_it_unconfirmed(traced):
    assert ev.judge_error(item(LINE["block"], RAISES_BOOM), traced["bad_loss"], SOURCE).to_json() == {
        "status": "unconfirmed",
        "reason": f"bad_loss(f32[3]) raises ValueError: boom, but not from the checkpoint at line {LINE['block']}",
        "evidence": {
            "target": "bad_loss(f32[3])",
            "stage": "forward",
            "exception": "ValueError: boom",
            "lines": [LINE["bad"] + 4, LINE["raise"]],
        },
    }


def test_another_exception_first_leaves_it_unconfirmed(traced):
    check = TraceCheck("exception", raises=(("TypeError", "boom"), ("ValueError", "bang")), refutes=True)
    assert ev.judge_error(item(LINE["bad"], check), traced["bad_loss"], SOURCE).to_json() == {
        "status": "unconfirmed",
        "reason": "bad_loss(f32[3]) fails first with another error: ValueError: boom",
        "evidence": {
            "target": "bad_loss(f32[3])",
            "stage": "forward",
            "exception": "ValueError: boom",
            "lines": [LINE["bad"] + 4, LINE["raise"]],
        },
    }
    grad = by_hand(failure=ev.Failure("grad", ValueError("bang"), [3]))
    assert ev.judge_error(item(9, RAISES_BOOM), grad, "").reason == (
        "grad of loss(f32[8]) fails first with another error: ValueError: bang"
    )


def test_a_trace_without_the_exception_refutes_only_rules_that_always_raise(traced):
    check = TraceCheck("exception", raises=(("TypeError", "a"), ("ValueError", "b"), ("TypeError", "c")), refutes=True)
    assert ev.judge_error(item(LINE["block"], check, on_site=True), traced["loss"], SOURCE).to_json() == {
        "status": "refuted",
        "reason": "grad of loss(f32[3]) traced without the predicted TypeError or ValueError",
        "evidence": {"target": "loss(f32[3])"},
    }
    forward_only = by_hand(prepared=Prepared("loss", print, (), {}, False, "test"), under=Counter({1: 1}))
    assert ev.judge_error(item(1, check), forward_only, "").reason == (
        "loss(f32[8]) traced without the predicted TypeError or ValueError"
    )
    assert ev.judge_error(item(1, TraceCheck("exception", raises=check.raises)), forward_only, "") is None
    assert ev.judge_error(item(1), forward_only, "") is None


def test_no_refutation_unless_the_flagged_code_ran_inside_the_checkpoint():
    check = TraceCheck("exception", raises=(("TypeError", "a"),), refutes=True)
    flagged = item(7, check, data={"test": [7, 20, 7, 28]})  # `not training` in `y = a(not training) if c else b`
    never = by_hand(under=Counter({6: 1}))
    assert ev.judge_error(flagged, never, "").to_json() == {
        "status": "unconfirmed",
        "reason": "tracing loss(f32[8]) never reached line 7",
        "evidence": {"target": "loss(f32[8])"},
    }
    recorded = by_hand(under=Counter({7: 1}), under_positions={(7, 7, 8, 9), (7, 7, 40, 41)}, source="recorded")
    assert ev.judge_error(flagged, recorded, "").reason == (
        "the recorded run ran line 7 but not the flagged expression at column 21"
    )
    ran = by_hand(under=Counter({7: 1}), under_positions={(7, 7, 24, 28)})
    assert ev.judge_error(flagged, ran, "").status == "refuted"
    assert ev.judge_error(item(7, check), ran, "").status == "refuted"  # no columns: the line is all there is


def test_an_exception_raised_by_the_flagged_site_itself_confirms():
    """``nn.remat(Block(16))``: the checkpoint call written at the finding raised, no wrapper frame."""
    fail = ev.Failure("build", ValueError("boom"), [2, 5, 7])
    assert fail.raised_at(item(7, on_site=True), "")
    assert not fail.raised_at(item(5, on_site=True), "")
    assert not fail.raised_at(item(7), "")  # not a checkpoint site
    assert not fail.raised_at(item(2, on_site=True), "")  # an outer frame, not where it was raised
    assert not ev.Failure("build", ValueError("boom"), []).raised_at(item(7, on_site=True), "")
    assert ev.Failure("build", ValueError("boom"), [7], under={9}).raised_at(item(8, end_line=9), "")


def test_an_import_error_confirms_only_from_the_flagged_lines():
    fail = ev.Failure("import", ValueError("boom here"), [4, 8, 12])
    assert fail.raised_at(item(12), "") and fail.raised_at(item(3, end_line=4), "")
    assert not fail.raised_at(item(5, end_line=7), "") and not fail.raised_at(item(9, end_line=11), "")
    assert ev.judge_import(item(12, RAISES_BOOM), fail).to_json() == {
        "status": "confirmed",
        "reason": "ValueError: boom here (import, line 12)",
        "evidence": {"stage": "import", "exception": "ValueError: boom here", "lines": [4, 8, 12]},
    }
    assert ev.judge_import(item(4, RAISES_BOOM), fail).reason == "ValueError: boom here (import, line 12)"
    for unconfirmed in (item(13, RAISES_BOOM), item(12, TraceCheck("exception", raises=(("TypeError", "boom"),)))):
        assert ev.judge_import(unconfirmed, fail).to_json() == {
            "status": "unconfirmed",
            "reason": "importing the module fails: ValueError: boom here",
            "evidence": {"stage": "import", "exception": "ValueError: boom here", "lines": [4, 8, 12]},
        }


def test_an_exception_is_summed_up_by_its_class_and_first_line():
    assert ev.Failure("forward", ValueError("  first\nsecond  "), []).summary == "ValueError: first"
    assert ev.Failure("forward", KeyError(), []).summary == "KeyError"
    assert ev.Failure("forward", ValueError("   "), []).summary == "ValueError"


def test_a_failure_keeps_the_lines_of_the_traced_file_and_those_under_a_checkpoint(traced):
    fail = traced["bad_loss"].failure
    assert fail is not None and (fail.stage, fail.lines, fail.under) == (
        "forward",
        [LINE["bad"] + 4, LINE["raise"]],
        {LINE["raise"]},
    )
    assert [site.definition[1] for site in fail.sites if site.definition] == [LINE["raise"] - 1]
    assert traced["loss"].failure is None


def test_the_stage_of_a_failure_is_where_it_was_raised(tmp_path: Path):
    def failing(stage: str) -> ev.Failure | None:
        build = {
            "build": lambda: (_ for _ in ()).throw(ValueError("no build")),
            "forward": lambda: Prepared("f", lambda x: x.undefined, F32, {}, True, "test"),
            "grad": lambda: Prepared("f", jnp.sin, F32, {}, True, "test"),
        }[stage]  # grad of a vector output
        run = ev.Run("f", str(tmp_path / "none.py"), build)  # type: ignore[arg-type]
        run.execute()
        return run.failure

    assert [failing(stage).stage for stage in ("build", "forward", "grad")] == ["build", "forward", "grad"]
    run = ev.Run("f", "none.py", lambda: (_ for _ in ()).throw(ValueError("x")), first_stage="run")  # type: ignore[arg-type]
    run.execute()
    assert run.failure is not None and run.failure.stage == "run"


# --- reaching the site --------------------------------------------------------------------------------


def test_a_trace_reaches_the_checkpoint_whose_lines_ran_under_it(traced):
    run = traced["loss"]
    assert run.at_site(item(LINE["block"]), SOURCE)  # the checkpoint equation written there
    assert run.at_site(item(LINE["print"]), SOURCE)  # a line of its body ran inside it
    assert not run.at_site(item(LINE["bad"]), SOURCE)
    assert not traced["plain"].at_site(item(LINE["print"]), SOURCE)
    assert traced["bad_loss"].at_site(item(LINE["bad"]), SOURCE)  # the wrapper that raised ran its body
    raised_here = by_hand(failure=ev.Failure("build", ValueError("boom"), [3, 7]))  # ``nn.remat(Block(16))`` raised
    assert raised_here.at_site(item(7, on_site=True), "") and not raised_here.at_site(item(3, on_site=True), "")
    assert by_hand(under=Counter({5: 1})).at_site(item(4, end_line=5), "")
    assert not by_hand(under=Counter({5: 0, 6: 1})).at_site(item(4, end_line=5), "")


def test_a_run_records_the_lines_traces_and_callbacks_of_its_target(traced):
    run = traced["loss"]
    assert run.under[LINE["print"]] >= 1 and run.lines[LINE["print"]] >= run.under[LINE["print"]]
    assert run.under[LINE["block"] + 4] == 0 < run.lines[LINE["block"] + 4]  # loss's line runs outside the checkpoint
    assert run.traces == 3  # the forward, and the gradient traced twice
    assert run.effects["forward"] == [("debug_print", (LINE["print"],))]
    assert [lines for _, lines in run.effects["grad"]] == [(LINE["print"],)] * 2
    assert ev.judge_callback(item(LINE["print"]), run).status == "confirmed"
    no_grad = ev.Run("f", run.filename, lambda: Prepared("f", run.prepared.fun, F32, {}, False, "test"))
    no_grad.execute()
    assert (no_grad.traces, "grad" in no_grad.effects) == (1, False)


# --- trace-time effects (REM201) ----------------------------------------------------------------------


def test_a_statement_that_runs_at_trace_time_only_is_confirmed():
    run = by_hand(under=Counter({5: 1, 6: 2}), traces=3, compiled_executions=Counter({9: 4}))
    assert ev.judge_side_effect(item(5, end_line=6), run).to_json() == {
        "status": "confirmed",
        "reason": "line 5 ran 3 times while JAX traced loss(f32[8]) 3 times, and never in 2 compiled calls of the step",
        "evidence": {
            "target": "loss(f32[8])",
            "traces": 3,
            "executions_while_tracing": 3,
            "compiled_calls": 2,
            "executions_in_compiled_calls": 0,
        },
    }


def test_a_statement_that_also_runs_in_the_compiled_step_is_refuted():
    run = by_hand(under=Counter({5: 1}), traces=1, compiled_executions=Counter({5: 2}))
    assert ev.judge_side_effect(item(5), run).to_json() == {
        "status": "refuted",
        "reason": "line 5 ran once while JAX traced loss(f32[8]) once, and twice in 2 compiled calls",
        "evidence": {
            "target": "loss(f32[8])",
            "traces": 1,
            "executions_while_tracing": 1,
            "compiled_calls": 2,
            "executions_in_compiled_calls": 2,
        },
    }


def test_a_statement_whose_step_was_not_run_is_confirmed_from_the_trace():
    run = by_hand(under=Counter({5: 2}), traces=2, compiled_executions=None)
    verdict = ev.judge_side_effect(item(5), run)
    assert verdict.to_json() == {
        "status": "confirmed",
        "reason": "line 5 ran twice while JAX traced loss(f32[8]) twice: it runs at trace time",
        "evidence": {
            "target": "loss(f32[8])",
            "traces": 2,
            "executions_while_tracing": 2,
            "compiled_calls": 0,
            "executions_in_compiled_calls": None,
        },
    }


def test_a_statement_that_never_ran_under_a_checkpoint_is_unconfirmed():
    run = by_hand(under=Counter({4: 1}), lines=Counter({5: 3}))
    assert ev.judge_side_effect(item(5), run).to_json() == {
        "status": "unconfirmed",
        "reason": "line 5 did not run inside a checkpoint while tracing loss(f32[8])",
        "evidence": {"target": "loss(f32[8])"},
    }


def test_the_compiled_step_runs_only_for_a_traced_run_with_small_inputs(traced):
    assert traced["loss"].compiled_executions == Counter()  # jax.debug.print runs no line of the file
    assert traced["bad_loss"].compiled_executions is None
    assert by_hand().compiled_executions is None
    big = (jax.ShapeDtypeStruct((ev.EXECUTE_LIMIT + 1,), jnp.float32),)
    assert by_hand(prepared=Prepared("f", lambda x: x.sum(), big, {}, True, "test")).compiled_executions is None
    limit = (jax.ShapeDtypeStruct((ev.EXECUTE_LIMIT,), jnp.float32),)
    assert by_hand(prepared=Prepared("f", lambda x: x.sum(), limit, {}, True, "test")).compiled_executions == Counter()


def test_a_host_callback_runs_in_each_compiled_call(tmp_path: Path):
    path = tmp_path / "host.py"
    path.write_text(
        "import jax\n\n\ndef log(x):\n    return None\n\n\n"
        "def loss(x):\n    jax.debug.callback(log, x)\n    return (x * x).sum()\n"
    )
    spec = importlib.util.spec_from_file_location("evidence_host", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    for differentiate in (True, False):
        run = ev.Run("loss", str(path), lambda d=differentiate: Prepared("loss", module.loss, F32, {}, d, "test"))
        run.execute()
        assert run.compiled_executions is not None and run.compiled_executions[5] == 2  # two calls of the step


def test_zeros_stand_in_for_declared_shapes_and_keys():
    assert ev._zeros(jax.ShapeDtypeStruct((2,), jnp.int32)).tolist() == [0, 0]
    assert ev._zeros(jax.ShapeDtypeStruct((), jnp.float32)).shape == ()
    key = jax.ShapeDtypeStruct((), jax.random.key(0).dtype)
    assert jnp.issubdtype(ev._zeros(key).dtype, jax.dtypes.prng_key) and ev._zeros(key).shape == ()
    keys = ev._zeros(jax.ShapeDtypeStruct((3,), jax.random.key(0).dtype))
    assert keys.shape == (3,) and jnp.issubdtype(keys.dtype, jax.dtypes.prng_key)
    assert ev._zeros(1.5) == 1.5


# --- callbacks (REM203) -------------------------------------------------------------------------------


def test_a_callback_that_runs_more_often_under_grad_is_confirmed():
    run = by_hand(
        effects={
            "forward": [("debug_print", (5,)), ("debug_print", (9,))],
            "grad": [("debug_print", (5,)), ("debug_callback", (4, 5)), ("debug_print", (9,))],
        }
    )
    assert ev.judge_callback(item(5), run).to_json() == {
        "status": "confirmed",
        "reason": "the callback runs twice per step under grad of loss(f32[8]) (once in the forward alone)",
        "evidence": {"target": "loss(f32[8])", "forward": 1, "grad": 2},
    }


def test_a_callback_that_runs_as_often_under_grad_is_refuted():
    run = by_hand(effects={"forward": [("debug_print", (5,))], "grad": [("debug_print", (5,))]})
    assert ev.judge_callback(item(5), run).to_json() == {
        "status": "refuted",
        "reason": "the callback runs once under grad of loss(f32[8]), as often as in the forward",
        "evidence": {"target": "loss(f32[8])", "forward": 1, "grad": 1},
    }


def test_a_callback_that_was_not_traced_is_unconfirmed():
    for effects in (
        {"forward": [("debug_print", (6,))], "grad": [("debug_print", (5,))] * 2},
        {"forward": [("debug_print", (5,))]},
    ):
        grad = len(effects.get("grad", []))
        assert ev.judge_callback(item(5), by_hand(effects=effects)).to_json() == {
            "status": "unconfirmed",
            "reason": "no callback from line 5 in the traced loss(f32[8])",
            "evidence": {"target": "loss(f32[8])", "forward": 0 if grad else 1, "grad": grad},
        }


def test_only_callbacks_inside_a_checkpoint_count_in_the_forward(tmp_path: Path):
    """The forward counts callbacks under a checkpoint equation only; the gradient counts them all."""

    def loss(x):
        jax.debug.print("outside {}", x)
        return jax.checkpoint(lambda y: (jax.debug.print("inside {}", y), y * 2.0)[1])(x).sum()

    jaxpr = jax.make_jaxpr(loss)(*F32).jaxpr
    here = __file__
    forward = ev._effects(jaxpr, here, checkpointed_only=True)
    everything = ev._effects(jaxpr, here)
    assert [name for name, _ in forward] == ["debug_print"] and len(everything) == 2
    assert forward[0][1] and all(isinstance(n, int) for n in forward[0][1])
    assert ev._effects(jaxpr, "elsewhere.py") == [("debug_print", ()), ("debug_print", ())]


# --- names (REM008) -----------------------------------------------------------------------------------


def test_a_name_no_residual_carries_is_confirmed():
    run = by_hand(
        residuals=[
            ("f32[3]", "from the argument x"),
            ("f32[3]", "named 'kept' from checkpoint_name"),
            ("f32[3]", "named 'alpha' from checkpoint_name"),
        ]
    )
    assert ev.judge_name(item(5, data={"names": ["hiden", "other"]}), run).to_json() == {
        "status": "confirmed",
        "reason": "saved_residuals of grad of loss(f32[8]): no `named 'hiden'` among 3 residuals "
        "(saved names: alpha, kept)",
        "evidence": {
            "target": "loss(f32[8])",
            "name": "hiden",
            "saved_names": ["alpha", "kept"],
            "residuals": [
                {"aval": "f32[3]", "source": "from the argument x"},
                {"aval": "f32[3]", "source": "named 'kept' from checkpoint_name"},
                {"aval": "f32[3]", "source": "named 'alpha' from checkpoint_name"},
            ],
        },
    }
    assert ev.judge_name(item(5, data={"name": "hiden"}), by_hand(residuals=[])).reason == (
        "saved_residuals of grad of loss(f32[8]): no `named 'hiden'` among 0 residuals (saved names: none)"
    )


def test_a_saved_name_refutes_and_at_most_20_residuals_are_kept():
    residuals = [("f32[3]", f"named 'n{i}' from checkpoint_name") for i in range(25)]
    verdict = ev.judge_name(item(5, data={"name": "n24"}), by_hand(residuals=residuals))
    assert (verdict.status, verdict.reason) == (
        "refuted",
        "saved_residuals of grad of loss(f32[8]) has `named 'n24'`",
    )
    assert len(verdict.evidence["residuals"]) == 20


def test_no_name_verdict_without_residuals_or_a_name():
    assert ev.judge_name(item(5, data={"name": "kept"}), by_hand(residuals=None)) is None
    assert ev.judge_name(item(5, data={"names": [3]}), by_hand(residuals=[])) is None
    assert ev.checkpoint_name_of(item(5, data={"names": [], "name": "x"})) == "x"
    assert ev.checkpoint_name_of(item(5)) is None


def test_residuals_are_read_from_the_differentiated_target(traced):
    assert traced["named_loss"].residuals is not None
    assert any("named 'kept'" in src for _, src in traced["named_loss"].residuals)
    verdict = ev.judge_name(item(LINE["named"], data={"name": "kept"}), traced["named_loss"])
    assert verdict.status == "refuted"
    assert traced["bad_loss"].residuals is None
    assert by_hand(prepared=Prepared("f", jnp.sum, F32, {}, False, "test")).residuals is None


def test_a_name_policy_is_recognised_on_the_traced_checkpoint(traced):
    assert ev.name_policy_traced(item(LINE["named"], data={"name": "kept"}), traced["named_loss"])
    assert not ev.name_policy_traced(item(LINE["named"], data={"name": "hiden"}), traced["named_loss"])
    assert not ev.name_policy_traced(item(LINE["named"]), traced["named_loss"])
    assert not ev.name_policy_traced(item(LINE["block"], data={"name": "kept"}), traced["loss"])  # no policy: None
    policies = jax.checkpoint_policies
    assert ev.policy_names(policies.save_only_these_names("a", "b")) == {"a", "b"}
    offload = policies.save_and_offload_only_these_names(
        names_which_can_be_saved=["s"],
        names_which_can_be_offloaded=["o"],
        offload_src="device",
        offload_dst="pinned_host",
    )
    assert ev.policy_names(offload) == {"s", "o"}
    assert ev.policy_names(policies.dots_saveable) == set()
    assert ev.policy_names(SimpleNamespace(names=("a", 1), other="b")) == {"a"}

    def empty_cell_first():
        a = None
        del a
        b = {"after"}
        return lambda: (a, b)  # noqa: F821 (cell ``a`` is empty when read; the cells are read in name order)

    assert ev.policy_names(empty_cell_first()) == {"after"}


# --- static_argnames (REM010) -------------------------------------------------------------------------


def test_static_argnames_verdict_follows_jax_remat3():
    run = by_hand()
    previous = jax.config.jax_remat3
    try:
        jax.config.update("jax_remat3", False)
        assert ev.judge_static_argnames(item(5), run).to_json() == {
            "status": "confirmed",
            "reason": "jax_remat3 is off, so static_argnames is ignored; loss(f32[8]) traced the "
            "argument (no error with these inputs)",
            "evidence": {"target": "loss(f32[8])", "jax_remat3": False},
        }
        jax.config.update("jax_remat3", True)
        assert ev.judge_static_argnames(item(5), run).to_json() == {
            "status": "refuted",
            "reason": "jax_remat3 is on: JAX honours static_argnames",
            "evidence": {"target": "loss(f32[8])"},
        }
    finally:
        jax.config.update("jax_remat3", previous)


def test_counts_are_written_as_words_up_to_two():
    assert [ev.times(n) for n in (1, 2, 3, 0)] == ["once", "twice", "3 times", "0 times"]


def test_every_evidence_kind_a_rule_may_declare_has_a_registered_judge():
    assert sorted(ev.JUDGES) == sorted(EVIDENCE)
