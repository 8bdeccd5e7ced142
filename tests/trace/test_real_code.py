"""Defects met running ``--trace --trace-run`` on public projects' own tests (docs/real-code-trace.md),
each as our own minimal project: what a user sees must be true of the code it names."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.trace.test_discovery import PYTEST, project
from tests.trace_cases import lint

pytest.importorskip("jax")
JSON = ("--output-format", "json")


def trace_run(
    root: Path, files: dict[str, str], *options: str, command: str = PYTEST
) -> subprocess.CompletedProcess[str]:
    """``remat-lint --trace --trace-run COMMAND OPTIONS pkg`` over a project of ``files``."""
    project(root, files)
    return lint("--trace", "--trace-run", command, *options, "pkg", cwd=root)


# flax's tests/nnx/transforms_test.py: a checkpointed function that mutates a BatchStat passed to it
# could not be rebuilt alone (TraceContextError); its checkpoint ran in the test, which passed.
REPLAY_FAILS = """\
    import jax
    import jax.numpy as jnp

    CALLS = []


    def once(x):
        CALLS.append(x)
        if len(CALLS) > 1:  # the run's own call traces; the replay does not
            raise RuntimeError("traced once only")
        return jnp.sin(x)


    flaky = jax.checkpoint(once)  # line 14: applied by the run's grad of flaky_loss


    def flaky_loss(x):
        return jnp.sum(flaky(x))


    def plain(x):
        return jnp.sum(jnp.cos(x))
    """
REPLAY_TESTS = """\
    import jax
    import jax.numpy as jnp

    from pkg.model import flaky_loss, plain


    def test_flaky():
        assert jax.grad(flaky_loss)(jnp.ones(4)).shape == (4,)


    def test_plain():
        assert jax.grad(plain)(jnp.ones(4)).shape == (4,)
    """


def test_a_site_in_a_program_that_failed_to_build_is_not_called_unapplied(tmp_path: Path):
    """One program of the module was rebuilt (plain), the one that applied the checkpoint was not:
    which sites it applied is unknown, so no site of the module is "not applied" (REM402)."""
    proc = trace_run(tmp_path, {"pkg/model.py": REPLAY_FAILS, "tests/test_model.py": REPLAY_TESTS}, *JSON)
    found = [(f["code"], f["location"]["row"]) for f in json.loads(proc.stdout)]
    assert found == [("REM201", 8)], found  # the append, seen statically; no REM402 at line 14
    assert "no discovery in flaky_loss(f32[4]): the program failed at " in proc.stderr


# flax's tests/linen/linen_transforms_test.py -k remat: every selected test runs its remat forward
# only, and the findings said "take one from a run of the project (--trace-run ...)" of that run.
FORWARD_ONLY = """\
    import flax.linen as nn
    import jax.numpy as jnp

    SEEN = []


    class Counter(nn.Module):
        @nn.remat
        @nn.compact
        def __call__(self, x):
            SEEN.append(x)  # line 12: REM201
            return nn.Dense(2)(x)


    def predict(x):
        return jnp.cos(x)
    """
FORWARD_TESTS = """\
    import jax.numpy as jnp

    from pkg.model import predict


    def test_predict():
        assert predict(jnp.ones(4)).shape == (4,)
    """


def test_a_run_that_differentiated_nothing_is_not_offered_as_the_remedy(tmp_path: Path):
    pytest.importorskip("flax")
    proc = trace_run(tmp_path, {"pkg/model.py": FORWARD_ONLY, "tests/test_model.py": FORWARD_TESTS}, *JSON)
    (finding,) = json.loads(proc.stdout)
    reason = finding["trace"]["reason"]
    assert (finding["code"], finding["trace"]["status"]) == ("REM201", "unconfirmed")
    assert "--trace-run" not in reason, reason
    assert f"`{PYTEST}` differentiated no program through it; configure one" in reason, reason
    assert "[[tool.remat-lint.trace.targets]]" in reason, reason  # a declared target is still offered


def test_the_declaration_offered_after_a_run_names_what_the_run_missed():
    from remat_lint.trace.inputs import parameter_examples, suggestion

    examples = parameter_examples("def loss(params, x):\n    ...\n", "loss")
    text = suggestion("pkg.model", "loss", examples, ran="pytest tests/test_model.py")
    assert text.startswith("`pytest tests/test_model.py` differentiated no program that reaches `loss`. "), text
    assert "--trace-run" not in text


# flax's tests/nnx/transforms_test.py and examples/nnx_toy_examples/10_fsdp_and_optimizer.py set
# XLA_FLAGS at import to get host devices: the barrier flag the compiled costs need was dropped.
SETS_XLA_FLAGS = """\
    import os

    os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
    """


def test_a_command_that_sets_xla_flags_in_python_keeps_the_barrier_flag(tmp_path: Path):
    pytest.importorskip("flax")
    from tests.trace.test_discovery import MODEL, TESTS

    files = {"pkg/model.py": MODEL, "tests/test_model.py": TESTS, "tests/conftest.py": SETS_XLA_FLAGS}
    proc = trace_run(tmp_path, files, *JSON, command=f"{PYTEST}/test_model.py::test_nnx")
    assert "XLA:CPU ran without" not in proc.stderr, proc.stderr
    assert ("REM401", 23) in [(f["code"], f["location"]["row"]) for f in json.loads(proc.stdout)]


# flax's tests/nnx/transforms_test.py: two tests each define `@nnx.custom_vjp @nnx.remat def f`; the
# site at the later line got the table of the earlier test's program (traced as its loss_fn).
SAME_NAME = """\
    import jax
    import jax.numpy as jnp


    def first(x):
        @jax.custom_vjp
        @jax.checkpoint  # line 7
        def f(x):
            return jnp.sin(x)

        f.defvjp(lambda x: (f(x), x), lambda x, g: (g * jnp.cos(x),))
        return jnp.sum(f(x))


    def second(x):
        @jax.custom_vjp
        @jax.checkpoint  # line 17
        def f(x):
            return jnp.sin(x)

        f.defvjp(lambda x: (f(x), x), lambda x, g: (g * jnp.cos(x),))
        return jnp.sum(f(x))
    """
SAME_NAME_TESTS = """\
    import jax
    import jax.numpy as jnp

    from pkg.model import first


    def test_first():
        assert jax.grad(first)(jnp.ones(4)).shape == (4,)
    """


def test_a_decorated_function_is_not_matched_to_another_of_the_same_name():
    from remat_lint.trace.worker.jaxpr_sites import target_at

    code = textwrap.dedent(SAME_NAME)
    assert target_at(code, 7).spans == ((6, 9),)
    assert target_at(code, 17).spans == ((16, 19),)


@pytest.fixture(scope="module")
def same_name(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    files = {"pkg/model.py": SAME_NAME, "tests/test_model.py": SAME_NAME_TESTS}
    return trace_run(tmp_path_factory.mktemp("same_name"), files)


def test_a_site_table_names_the_program_that_applied_it(same_name: subprocess.CompletedProcess[str]):
    proc = same_name
    tables = [line for line in proc.stdout.splitlines() if "checkpoint site (traced as first" in line]
    assert tables == ["pkg/model.py:7: checkpoint site (traced as first(f32[4]))"], proc.stdout


def test_findings_made_by_tracing_count_as_judged_on_the_recorded_programs(
    same_name: subprocess.CompletedProcess[str],
):
    """flax's tests/nnx/transforms_test.py: "5 confirmed" beside "0 of 5 findings judged on them", all
    five found by tracing those programs."""
    proc = same_name
    assert "pkg/model.py:17:5: REM402 " in proc.stdout  # second() is never differentiated
    assert "1 of 1 finding judged on them." in proc.stderr, proc.stderr


# big_vision's ViT Encoder: `nn.remat(Encoder1DBlock, policy=...)` only under `if self.scan:`, so with
# scan=False (its default) no checkpoint is applied and `remat_policy` decides nothing. Our own model
# in that shape:
SCAN_ONLY_REMAT = """\
    import flax.linen as nn
    import jax.numpy as jnp


    class Block(nn.Module):
        @nn.compact
        def __call__(self, x, _):
            return x + nn.Dense(x.shape[-1])(jnp.tanh(x)), None


    class Encoder(nn.Module):
        depth: int
        scan: bool = False

        @nn.compact
        def __call__(self, x):
            if self.scan:
                block = nn.remat(Block, prevent_cse=False)  # line 18
                scanned = nn.scan(block, variable_axes={"params": 0}, split_rngs={"params": True}, length=self.depth)
                return scanned()(x, None)[0]
            for _ in range(self.depth):
                x = Block()(x, None)[0]
            return x
    """
SCAN_ONLY_TESTS = """\
    import jax
    import jax.numpy as jnp

    from pkg.model import Encoder


    def test_step():
        model = Encoder(depth=2)
        x = jnp.ones((8, 16))
        params = model.init(jax.random.key(0), x)
        loss = lambda p: jnp.mean(model.apply(p, x) ** 2)
        assert jax.value_and_grad(loss)(params)[0] > 0
    """


def test_a_checkpoint_only_a_scan_setting_applies_is_not_applied_without_it(tmp_path: Path):
    pytest.importorskip("flax")
    proc = trace_run(tmp_path, {"pkg/model.py": SCAN_ONLY_REMAT, "tests/test_model.py": SCAN_ONLY_TESTS}, *JSON)
    (found,) = json.loads(proc.stdout)
    assert (found["code"], found["location"]["row"]) == ("REM402", 18), proc.stderr
    assert found["trace"]["evidence"]["programs"] == ["test_step.<locals>.<lambda>(<4 arrays>)"]


# equinox: `eqx.filter_value_and_grad` differentiates a closure of its own over the user's function;
# the program was named `_ValueAndGradWrapper.__call__.<locals>.fun_value_and_grad(...)`.
EQX_MODEL = """\
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    forward = eqx.filter_checkpoint(lambda model, x: jax.vmap(model)(x))  # line 5


    @eqx.filter_value_and_grad
    def loss(model, x, y):
        return jnp.mean((forward(model, x) - y) ** 2)
    """
EQX_TESTS = """\
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    from pkg.model import loss


    def test_loss():
        model = eqx.nn.MLP(16, 4, 64, 2, key=jax.random.key(0))
        assert loss(model, jnp.ones((32, 16)), jnp.ones((32, 4)))[0] > 0
    """


def test_a_program_a_framework_differentiates_is_named_by_the_users_function(tmp_path: Path):
    pytest.importorskip("equinox")
    proc = trace_run(tmp_path, {"pkg/model.py": EQX_MODEL, "tests/test_model.py": EQX_TESTS})
    # the whole-forward checkpoint is REM102's (confirmed, the wrap as its related location); the
    # site table and the run's summary name the program
    assert "pkg/model.py:5: checkpoint site (traced as loss via fun_value_and_grad(" in proc.stdout, proc.stdout
    assert "recorded 1 differentiated call (value_and_grad of loss via fun_value_and_grad)" in proc.stderr
    assert "_ValueAndGradWrapper" not in proc.stdout + proc.stderr


def test_a_name_recorded_at_several_signatures_is_listed_once_with_its_count():
    """flax's parameterised tests: "grad of loss_fn, grad of loss_fn, ..." read as duplicates."""
    from remat_lint.trace.driver.dispatch import TraceOutcome, describe_run

    outcome = TraceOutcome(backends={"cpu"}, recorded=["grad of loss_fn", "grad of step", "grad of loss_fn"])
    text = describe_run(outcome, [])
    assert "recorded 3 differentiated calls (2x grad of loss_fn, grad of step); " in text, text
