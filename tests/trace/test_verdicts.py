"""--trace verdicts pinned, one test per branch of the evidence: the predicted exception at the
flagged checkpoint, another exception first, the predicted exception raised by another checkpoint,
the site never reached (the plain function a checkpoint wraps, a target that never uses it), guessed
shapes that must not refute, compiled-cost evidence above and below the threshold for the flagged
call only, and verdicts that do not depend on the order of the targets.

Each module runs in one worker process (module-scoped fixtures), with findings written by hand."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from remat_lint.registry import rule_by_code
from remat_lint.trace.driver.dispatch import TraceOptions, worker_env
from tests.trace_cases import LINEN_LAYERS

pytest.importorskip("jax")

ROOT = Path(__file__).resolve().parents[2]


def worker(
    root: Path, source: str, findings: dict[str, dict[str, Any]], trace: dict[str, Any] | None = None
) -> dict[str, dict]:
    """Write ``source`` as ``root/mod.py``, run the worker on it, and return each finding's verdict."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "mod.py").write_text(source)
    names = list(findings)
    request = {
        "path": str(root / "mod.py"),
        "root": str(root),
        "config_root": str(root),
        "trace": trace or {},
        "findings": [{"id": i, "data": {}, **findings[name]} for i, name in enumerate(names)],
        "sites": [],
    }
    proc = subprocess.run(
        [sys.executable, "-m", "remat_lint.trace.worker"],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
        env=worker_env(TraceOptions(backend="cpu")),
    )
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    return {names[line["finding"]]: line["trace"] for line in lines if "finding" in line}


def at(
    source: str, needle: str, code: str, *, on_site: bool = True, nth: int = 0, line_has: str = ""
) -> dict[str, Any]:
    """A finding of rule ``code`` (with its declared trace check) on the ``nth`` occurrence of
    ``needle`` (on a line containing ``line_has``), with its exact span (0-based columns)."""
    rows = source.splitlines()
    hits = [(row, line.index(needle)) for row, line in enumerate(rows, start=1) if needle in line and line_has in line]
    row, column = hits[nth]
    rule = rule_by_code(code)
    assert rule is not None and rule.trace_check is not None
    return {
        "code": code,
        "line": row,
        "end_line": row,
        "column": column,
        "end_column": column + len(needle),
        "on_site": on_site,
        "check": dataclasses.asdict(rule.trace_check),
    }


# --- exceptions -----------------------------------------------------------------------------------

ERRORS = textwrap.dedent(
    """\
    import jax
    import jax.numpy as jnp


    def mlp(x, w):
        return jnp.tanh(x @ w)


    def picky(x, w):
        if x.shape[0] != 3:
            raise ValueError("picky needs 3 rows")
        return jnp.tanh(x @ w)


    block = jax.checkpoint(mlp, policy="dots_saveable")
    fine = jax.checkpoint(mlp, policy=jax.checkpoint_policies.dots_saveable)
    other = jax.checkpoint(mlp, policy="nothing_saveable")
    fails_first = jax.checkpoint(picky, policy="dots_saveable")
    unused = jax.checkpoint(mlp, policy="everything_saveable")


    # remat-lint: trace(f32[4,8], f32[8,8])
    def loss(x, w):
        return jnp.sum(block(x, w) ** 2)


    # remat-lint: trace(f32[4,8], f32[8,8])
    def loss_fine(x, w):
        return jnp.sum(fine(x, w) ** 2)


    # remat-lint: trace(f32[4,8], f32[8,8])
    def loss_fine_then_other(x, w):
        h = fine(x, w)
        return jnp.sum(other(h, w) ** 2)


    # remat-lint: trace(f32[4,8], f32[8,8])
    def loss_fails_first(x, w):
        return jnp.sum(fails_first(x, w) ** 2)


    # remat-lint: trace(f32[4,8], f32[8,8])
    def loss_plain(x, w):
        return jnp.sum(mlp(x, w) ** 2)
    """
)
ERROR_FINDINGS = {
    "at-site": at(ERRORS, 'block = jax.checkpoint(mlp, policy="dots_saveable")', "REM001"),
    # the site is traced without error (loss_fine): declared shapes refute (every REM004 finding raises)
    "no-error": at(ERRORS, "fine = jax.checkpoint(mlp, policy=jax.checkpoint_policies.dots_saveable)", "REM004"),
    # hand-written: the checkpoint at `fine` is traced, but the TypeError comes from `other`
    "elsewhere": at(ERRORS, "fine(x, w)", "REM001", on_site=False, line_has="h = "),
    "another-error-first": at(ERRORS, 'fails_first = jax.checkpoint(picky, policy="dots_saveable")', "REM001"),
    # only loss_plain calls mlp without this checkpoint: no target goes through it
    "never-reached": at(ERRORS, 'unused = jax.checkpoint(mlp, policy="everything_saveable")', "REM001"),
}


@pytest.fixture(scope="module")
def errors(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    return worker(tmp_path_factory.mktemp("errors"), ERRORS, ERROR_FINDINGS)


def test_predicted_exception_at_the_flagged_checkpoint_confirms(errors):
    v = errors["at-site"]
    assert v["status"] == "confirmed", v
    assert v["reason"] == (
        "TypeError: 'str' object is not callable (grad: grad of loss(f32[4,8], f32[8,8])) "
        "[shapes declared in an inline comment]"
    )
    assert v["evidence"]["shapes"] == "declared"


def test_the_site_traced_without_the_exception_refutes_at_declared_shapes(errors):
    v = errors["no-error"]
    assert v["status"] == "refuted", v
    assert v["reason"].startswith(
        "grad of loss_fine(f32[4,8], f32[8,8]) traced without the predicted TransformTargetError"
    )


def test_the_predicted_exception_from_another_checkpoint_is_no_confirmation(errors):
    v = errors["elsewhere"]
    assert v["status"] == "unconfirmed", v
    assert "raises TypeError: 'str' object is not callable, but not from the checkpoint at line" in v["reason"]


def test_another_exception_first_leaves_the_finding_unconfirmed(errors):
    v = errors["another-error-first"]
    assert v["status"] == "unconfirmed", v
    assert v["reason"].startswith(
        "loss_fails_first(f32[4,8], f32[8,8]) fails first with another error: ValueError: picky needs 3 rows"
    )


def test_a_site_no_target_goes_through_is_no_evidence(errors):
    v = errors["never-reached"]
    assert v["status"] == "unconfirmed", v
    assert v["reason"].startswith("no target traced went through line 19 (")
    assert "loss_plain(f32[4,8], f32[8,8])" in v["reason"]  # it calls mlp, the function the checkpoint wraps


# --- the checkpointed binding, found by the shape search ------------------------------------------------

BINDING = textwrap.dedent(
    """\
    import jax
    import jax.numpy as jnp


    def mlp(x, w):
        return jnp.tanh(x @ w)


    block = jax.checkpoint(mlp, policy="dots_saveable")
    fine = jax.checkpoint(mlp, policy=jax.checkpoint_policies.dots_saveable)


    def loss(x, w):
        return jnp.sum(block(x, w) ** 2)


    def loss_fine(x, w):
        return jnp.sum(fine(x, w) ** 2)
    """
)


@pytest.fixture(scope="module")
def binding(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    findings = {
        "block": at(BINDING, 'block = jax.checkpoint(mlp, policy="dots_saveable")', "REM001"),
        # every REM004 finding raises: at declared shapes this trace would refute it
        "fine": at(BINDING, "fine = jax.checkpoint(mlp, policy=jax.checkpoint_policies.dots_saveable)", "REM004"),
    }
    return worker(tmp_path_factory.mktemp("binding"), BINDING, findings)


def test_the_checkpointed_binding_is_traced_not_the_function_it_wraps(binding):
    v = binding["block"]  # the search tries mlp first: tracing mlp says nothing about `block`
    assert v["status"] == "confirmed", v
    assert v["evidence"]["stage"] == "grad" and v["evidence"]["shapes"] == "guessed"
    assert v["reason"].endswith("[shapes guessed by a shape search]")


def test_guessed_shapes_never_refute(binding):
    v = binding["fine"]
    assert v["status"] == "unconfirmed", v
    assert (
        "traced without the predicted TransformTargetError or AttributeError or TypeError; not refuted: the shapes were guessed"
        in v["reason"]
    )


# --- compiled costs: the flagged call only ---------------------------------------------------------

NESTED = textwrap.dedent(
    """\
    from functools import partial

    import jax
    import jax.numpy as jnp


    @partial(jax.checkpoint, policy=jax.checkpoint_policies.nothing_saveable)
    def rb(x, w):
        return x + jnp.tanh(x @ w)


    # remat-lint: trace(f32[64,128], f32[128,128], f32[128,128])
    def loss(x, w1, w2):
        return jnp.sum(rb(rb(x, w1), w2) ** 2)


    def guessed(x, w1, w2):
        return jnp.sum(rb(rb(x, w1), w2) ** 2)
    """
)


@pytest.fixture(scope="module")
def nested(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    findings = {
        "outer": at(NESTED, "rb(rb(x, w1), w2)", "REM102", on_site=False),
        "inner": at(NESTED, "rb(x, w1)", "REM102", on_site=False),
        "guessed-inner": at(NESTED, "rb(x, w1)", "REM102", on_site=False, nth=1),
    }
    return worker(tmp_path_factory.mktemp("nested"), NESTED, findings)


def test_cost_fix_removes_the_checkpoint_of_the_flagged_call_only(nested):
    v = nested["outer"]  # the last stage: no memory saved, FLOPs spent (removing both calls' checkpoints saves memory)
    assert v["status"] == "confirmed", v
    ev = v["evidence"]
    assert ev["calls"] == 1 and ev["shapes"] == "declared"
    assert ev["as_written"]["temp_bytes"] <= ev["with_fix"]["temp_bytes"] * 1.01
    assert ev["as_written"]["flops"] > ev["with_fix"]["flops"] * 1.01


def test_cost_evidence_below_the_threshold_refutes_at_declared_shapes(nested):
    v = nested["inner"]  # the first stage's checkpoint does save memory
    assert v["status"] == "refuted", v
    assert v["reason"].startswith("The checkpoint saves memory.")
    assert v["evidence"]["calls"] == 1


def test_cost_rules_are_not_refuted_at_guessed_shapes(nested):
    v = nested["guessed-inner"]
    assert v["status"] == "unconfirmed", v
    assert "not refuted: the shapes were guessed" in v["reason"] and v["evidence"]["shapes"] == "guessed"


# --- targets in any order --------------------------------------------------------------------------

FLAX = LINEN_LAYERS + textwrap.dedent(
    """\


    class Encoder(nn.Module):
        @nn.compact
        def __call__(self, x, deterministic=True):
            return RematBlock()(x, deterministic)


    class Head(nn.Module):
        @nn.compact
        def __call__(self, x):
            return Block()(x, True).sum()
    """
)
FLAX_FINDINGS = {
    "REM011": at(FLAX, "nn.remat(Block, static_argnums=(1,))", "REM011"),
    "REM202": at(FLAX, "if not deterministic:", "REM202", on_site=False),
}


@pytest.fixture(scope="module", params=[("Head", "Encoder"), ("Encoder", "Head")], ids=["head-first", "encoder-first"])
def flax_verdicts(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    pytest.importorskip("flax")
    targets = [{"module": f"mod:{name}", "init_args": ["f32[4,16]"]} for name in request.param]
    return worker(tmp_path_factory.mktemp("flax"), FLAX, FLAX_FINDINGS, {"targets": targets})


def test_a_target_that_does_not_use_the_checkpoint_refutes_nothing_in_any_order(flax_verdicts):
    for code in ("REM011", "REM202"):
        v = flax_verdicts[code]
        assert v["status"] == "confirmed", v
        assert v["reason"].startswith("TracerBoolConversionError: ") and "(build: Encoder)" in v["reason"]


# --- coverage of the worker -------------------------------------------------------------------------


def test_the_worker_saves_coverage_data_before_it_exits(tmp_path: Path):
    coverage = pytest.importorskip("coverage")
    (tmp_path / "m.py").write_text("x = 1\n")
    request = {"path": str(tmp_path / "m.py"), "root": str(tmp_path), "findings": [], "sites": []}
    data = tmp_path / "coverage-data"
    proc = subprocess.run(
        [sys.executable, "-m", "coverage", "run", f"--data-file={data}", "-m", "remat_lint.trace.worker"],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    measured = coverage.CoverageData(basename=str(data))
    measured.read()
    worker_file = next(f for f in measured.measured_files() if f.endswith("remat_lint/trace/worker/session.py"))
    assert measured.lines(worker_file)  # os._exit would otherwise drop everything


def test_an_exception_matches_a_declared_one_only_with_every_word():
    from remat_lint.trace.worker.evidence import matches

    declared = [("TypeError", "'str' object is not callable")]
    assert matches(TypeError("'str' object is not callable"), declared)
    # a shape search that passes an array where a Module goes raises this: no evidence about the policy
    assert not matches(TypeError("'DynamicJaxprTracer' object is not callable"), declared)
    assert not matches(ValueError("'str' object is not callable"), declared)
    assert matches(TypeError("anything"), [("TypeError", "")])
    static = [("TypeError", "the static_argnums argument")]
    assert matches(TypeError("the `static_argnums` argument to `jax.checkpoint` / `jax.remat` can only take"), static)
    # the words are all there, not the phrase: a shape error that suggests static_argnums
    assert not matches(
        TypeError(
            "Shapes must be 1D sequences of concrete values of integer type.\n"
            "If using `jit`, try using `static_argnums`. It depends on the argument h."
        ),
        static,
    )


CLASS_CHECKPOINT = textwrap.dedent(
    """\
    import flax.linen as nn
    import jax


    class Block(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.gelu(nn.Dense(16)(x))


    RematBlock = jax.checkpoint(Block)


    class Model(nn.Module):
        @nn.compact
        def __call__(self, x):
            return RematBlock()(x).sum()
    """
)


def test_a_checkpointed_class_is_matched_by_its_class_line(tmp_path: Path):
    pytest.importorskip("flax")
    finding = at(CLASS_CHECKPOINT, "jax.checkpoint(Block)", "REM009")
    v = worker(
        tmp_path,
        CLASS_CHECKPOINT,
        {"REM009": finding},
        {"targets": [{"module": "mod:Model", "init_args": ["f32[4,16]"]}]},
    )["REM009"]
    assert v["status"] == "confirmed", v
    assert v["reason"].startswith(
        "TypeError: function <unknown> traced for checkpoint / remat returned a value of type "
        "<class 'mod.Block'>, which is not a valid JAX type (build: Model)"
    )
