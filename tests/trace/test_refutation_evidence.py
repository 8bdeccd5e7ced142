"""A trace refutes a finding only where the flagged code ran inside the checkpoint.

The case met on a Flax GPT trainer: ``nn.remat(Block)`` traces ``training``, and
``deterministic=not training`` sits behind ``self.rate > 0``; the project's tests run with rate 0, so the
recorded program never evaluates it, while the default configuration crashes at ``init``. REM202 must
stay unconfirmed (exit 1), saying that the run never reached the flagged code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.trace.test_run import PYTEST, project
from tests.trace_cases import lint

pytest.importorskip("flax")

MODEL = """\
    import flax.linen as nn
    import jax
    import jax.numpy as jnp


    class Block(nn.Module):
        rate: float = 0.0

        @nn.compact
        def __call__(self, x, training):
            x = nn.Dense(8)(x)
            {dropout}
            return jnp.tanh(x)


    class Model(nn.Module):
        rate: float = 0.1

        @nn.compact
        def __call__(self, x, training):
            for _ in range(2):
                x = nn.remat(Block)(self.rate)(x, training)
            return x


    def loss(params, model, x, training):
        return jnp.mean(model.apply(params, x, training, rngs={{"dropout": jax.random.key(1)}}) ** 2)
    """
TEST = """\
    import jax
    import jax.numpy as jnp

    from pkg.model import Model, loss


    def test_step():
        model = Model(rate=0.0)
        x = jnp.ones((4, 8))
        params = model.init(jax.random.key(0), x, True)
        grads = jax.grad(loss)(params, model, x, True)
        assert jax.tree_util.tree_leaves(grads)
    """
SKIPPED_BRANCH = "if self.rate > 0:\n                x = nn.Dropout(self.rate, deterministic=not training)(x)"
SKIPPED_OPERAND = "x = nn.Dropout(self.rate, deterministic=not training)(x) if self.rate > 0 else x"


@pytest.mark.parametrize(
    ("dropout", "reason"),
    [
        (SKIPPED_BRANCH, "no differentiated program of the run reached line 13 (it recorded grad of loss)"),
        (SKIPPED_OPERAND, "the recorded run ran line 12 but not the flagged expression at column 53"),
    ],
)
def test_a_finding_the_recorded_run_never_reached_is_not_refuted(tmp_path: Path, dropout: str, reason: str) -> None:
    project(
        tmp_path, {"pkg/__init__.py": "", "pkg/model.py": MODEL.format(dropout=dropout), "tests/test_model.py": TEST}
    )
    proc = lint("--trace", "--trace-run", PYTEST, "--output-format", "json", "pkg", cwd=tmp_path)
    (item,) = [item for item in json.loads(proc.stdout) if item["code"] == "REM202"]
    assert item["trace"]["status"] == "unconfirmed", item["trace"]
    assert reason in item["trace"]["reason"]
    assert proc.returncode == 1


FAILING_TEST = """\
    def test_boom():
        raise RuntimeError("boom from the user's test")
    """


def test_the_report_says_what_the_run_recorded_and_how_a_failing_command_ended(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/model.py": MODEL.format(dropout=SKIPPED_BRANCH),
        "tests/test_model.py": TEST,
        "tests/test_fail.py": FAILING_TEST,
    }
    project(tmp_path, files)
    proc = lint("--trace", "--trace-run", PYTEST, "pkg", cwd=tmp_path)
    assert "no abstract inputs" not in proc.stdout and "take one from a run of the project" not in proc.stdout
    assert (
        "trace: unconfirmed: no differentiated program of the run reached line 13 (it recorded grad of loss)"
        in proc.stdout
    )
    assert "exited with 1; its last output lines:\n" in proc.stderr
    assert "    E       RuntimeError: boom from the user's test\n" in proc.stderr
    assert "    FAILED tests/test_fail.py::test_boom - RuntimeError: boom from the user's test\n" in proc.stderr
    assert "--trace-run: recorded 1 differentiated call (grad of loss); 0 of 1 finding judged on them." in proc.stderr
