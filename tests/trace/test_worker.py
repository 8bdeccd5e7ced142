"""The --trace worker on one module, with findings written by hand: every evidence kind it owns,
confirmed and refuted (one worker run for the whole module keeps this fast)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from remat_lint.registry import rule_by_code

pytest.importorskip("jax")

ROOT = Path(__file__).resolve().parents[2]

MODULE = textwrap.dedent(
    """\
    from functools import partial

    import jax
    import jax.numpy as jnp
    from jax.ad_checkpoint import checkpoint_name

    cp = jax.checkpoint_policies


    # remat-lint: trace(f32[8,8])
    @partial(jax.checkpoint, policy="dots_saveable")
    def bad_policy(x):
        return jnp.sin(x @ x)


    # remat-lint: trace(f32[8,8])
    @partial(jax.checkpoint, policy=cp.dots_saveable)
    def good_policy(x):
        return jnp.sin(x @ x)


    # remat-lint: trace(f32[8,8])
    @partial(jax.checkpoint, policy=cp.save_only_these_names("h"))
    def named(x):
        h = checkpoint_name(jnp.sin(x @ x), "h")
        return jnp.cos(h @ x)


    # remat-lint: trace(f32[8,8])
    @partial(jax.checkpoint, policy=cp.everything_saveable)
    def saves_all(x):
        jax.debug.print("{}", x.sum())
        return jnp.sin(x @ x)


    @jax.checkpoint
    def effects(x):
        print("user output")
        jax.debug.print("{}", x.sum())
        return jnp.sin(x)


    @partial(jax.checkpoint, static_argnames="n")
    def branchy(x, n):
        if n > 0:
            return x
        return -x


    @partial(jax.checkpoint, static_argnames="n")
    def unused_static(x, n):
        return x * 2.0


    @partial(jax.checkpoint, static_argnums=[1])
    def listed(x, n):
        return x * n


    def needs_dict(params):
        return jax.checkpoint(lambda p: p["w"] @ p["w"])(params).sum()
    """
)


def rows(needle: str) -> list[int]:
    return [i for i, line in enumerate(MODULE.splitlines(), start=1) if needle in line]


def finding(
    code: str, needle: str, nth: int = 0, check: str | None = None, on_site: bool = False, **data: object
) -> dict:
    """A finding of rule ``code`` (or with the trace check of rule ``check``) on the ``nth`` line with ``needle``
    (``on_site``: a checkpoint call's line, as the driver marks it)."""
    row = rows(needle)[nth]
    rule = rule_by_code(check or code)
    assert rule is not None
    declared = rule.trace_check
    return {
        "code": code,
        "line": row,
        "end_line": row,
        "data": data,
        "on_site": on_site,
        "check": dataclasses.asdict(declared) if declared else None,
    }


FINDINGS = {
    "str-policy": finding("REM001", 'policy="dots_saveable"'),
    # REM004's findings always raise: the checkpoint traced without error refutes one
    "callable-policy": finding("REM004", "policy=cp.dots_saveable", on_site=True),
    "silent": finding("REM001", "policy=cp.dots_saveable"),  # REM001's empty string raises nothing
    "saved-name": finding("REM008", 'save_only_these_names("h")', names=["h"]),
    "missing-name": finding("REM008", 'save_only_these_names("h")', names=["typo"]),
    "print": finding("REM201", 'print("user output")'),
    "debug-print-saved": finding("REM203", "jax.debug.print", nth=0),  # in saves_all
    "debug-print": finding("REM203", "jax.debug.print", nth=1),  # in effects
    "static-argnames-branch": finding("REM010", 'static_argnames="n"', nth=0),
    "static-argnames-unused": finding("REM010", 'static_argnames="n"', nth=1),
    "control-flow": finding("REM202", "if n > 0"),
    "no-inputs": finding("REM001", "jax.checkpoint(lambda p"),
    "list-static-argnums": finding("REM011", "static_argnums=[1]"),
}


def run_worker(root: Path, source: str, findings: list[dict]) -> list[dict]:
    (root / "mod.py").write_text(source)
    request = {
        "path": str(root / "mod.py"),
        "root": str(root),
        "trace": {},
        "findings": [{"id": i, **f} for i, f in enumerate(findings)],
        "sites": [],
    }
    proc = subprocess.run(
        [sys.executable, "-m", "remat_lint.trace.worker"],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "user output" not in proc.stdout  # what user code prints never mixes with the results
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert lines[0]["backend"] == "cpu"
    return sorted(((line["finding"], line["trace"]) for line in lines if "finding" in line), key=lambda x: x[0])


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory) -> dict[str, dict]:
    names = list(FINDINGS)
    results = run_worker(tmp_path_factory.mktemp("proj"), MODULE, [FINDINGS[name] for name in names])
    return {names[i]: trace for i, trace in results}


def test_every_finding_gets_a_verdict(verdicts):
    assert set(verdicts) == set(FINDINGS)


def test_predicted_error_is_reproduced_under_grad(verdicts):
    v = verdicts["str-policy"]
    assert v["status"] == "confirmed"
    assert v["evidence"]["exception"] == "TypeError: 'str' object is not callable"
    assert v["evidence"]["stage"] == "grad" and "bad_policy(f32[8,8])" in v["reason"]


def test_code_that_runs_fine_refutes_a_predicted_error(verdicts):
    v = verdicts["callable-policy"]
    assert v["status"] == "refuted"
    assert "traced without the predicted TransformTargetError or AttributeError or TypeError" in v["reason"]


def test_a_rule_whose_findings_need_not_raise_is_not_refuted(verdicts):
    assert verdicts["silent"]["status"] == "unconfirmed"
    assert "REM001 describes a misuse that tracing does not always show" in verdicts["silent"]["reason"]


def test_saved_residuals_names(verdicts):
    assert verdicts["saved-name"]["status"] == "refuted"
    missing = verdicts["missing-name"]
    assert missing["status"] == "confirmed" and missing["evidence"]["saved_names"] == ["h"]
    assert "no `named 'typo'`" in missing["reason"]


def test_python_side_effect_runs_at_trace_time_only(verdicts):
    v = verdicts["print"]
    assert v["status"] == "confirmed", v
    ev = v["evidence"]
    assert ev["executions_while_tracing"] >= 1 and ev["executions_in_compiled_calls"] == 0
    assert "effects(f32[8])" in v["reason"]  # inputs found by the shape search


def test_debug_callback_runs_twice_under_grad(verdicts):
    v = verdicts["debug-print"]
    assert v["status"] == "confirmed" and (v["evidence"]["forward"], v["evidence"]["grad"]) == (1, 2)


def test_debug_callback_with_everything_saveable_runs_once(verdicts):
    v = verdicts["debug-print-saved"]
    assert v["status"] == "refuted" and (v["evidence"]["forward"], v["evidence"]["grad"]) == (1, 1)


def test_tracer_bool_errors(verdicts):
    for name in ("static-argnames-branch", "control-flow"):
        v = verdicts[name]
        assert v["status"] == "confirmed", v
        assert v["evidence"]["exception"].startswith("TracerBoolConversionError")
    unused = verdicts["static-argnames-unused"]
    assert unused["status"] == "confirmed" and unused["evidence"]["jax_remat3"] is False


def test_missing_inputs_say_what_to_add(verdicts):
    v = verdicts["no-inputs"]
    assert v["status"] == "unconfirmed"
    assert "--trace-run" in v["reason"] and "No declaration is offered for `needs_dict(params)`" in v["reason"]
    assert "`params`: a pytree" in v["reason"] and "# remat-lint: trace(" not in v["reason"]


def test_an_error_at_import_confirms_the_finding_on_its_line(tmp_path: Path):
    source = "import jax\n\n\n@jax.checkpoint(policy=jax.checkpoint_policies.dots_saveable)\ndef block(x):\n    print('user output')\n    return x\n"
    decorator = {
        "code": "REM006",
        "line": 4,
        "end_line": 4,
        "check": dataclasses.asdict(rule_by_code("REM006").trace_check),
    }
    effect = {
        "code": "REM201",
        "line": 6,
        "end_line": 6,
        "check": dataclasses.asdict(rule_by_code("REM201").trace_check),
    }
    (_, confirmed), (_, unconfirmed) = run_worker(tmp_path, source, [decorator, effect])
    assert confirmed["status"] == "confirmed"
    assert (
        confirmed["reason"] == "TypeError: checkpoint() missing 1 required positional argument: 'fun' (import, line 4)"
    )
    assert unconfirmed["status"] == "unconfirmed"
    assert unconfirmed["reason"].startswith("importing the module fails: TypeError: checkpoint() missing")


def test_an_error_every_shape_raises_is_evidence_even_unnamed(verdicts):
    v = verdicts["list-static-argnums"]  # REM011 declares JAX's TypeError for a list
    assert v["status"] == "confirmed", v
    assert v["evidence"]["exception"].startswith("TypeError: the `static_argnums` argument to `jax.checkpoint`")
