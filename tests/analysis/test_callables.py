"""What ``analysis/callables.py`` resolves, seen through the findings of the rules that use it;
written against surviving mutants (docs/mutation-testing.md)."""

from __future__ import annotations

import pytest

from tests.helpers import lint

_BLOCK = """\
from flax import nnx

class Block(nnx.Module):
    def __init__(self, rngs):
        WRITE

    @nnx.remat
    def __call__(self, x, deterministic):
        return self.drop(x, deterministic=deterministic)
"""


def test_a_layer_written_once_to_self_is_followed_to_its_construction():
    [finding] = lint(_BLOCK.replace("WRITE", "self.drop = nnx.Dropout(0.1, rngs=rngs)"))
    assert (finding.code, finding.start.row) == ("REM202", 9)
    assert "`if deterministic` in `Dropout`" in finding.message


@pytest.mark.parametrize(
    "write",
    [
        "self.drop: nnx.Dropout = nnx.Dropout(0.1, rngs=rngs)",  # annotated
        "self.drop, self.scale = nnx.Dropout(0.1, rngs=rngs), 2.0",  # a tuple target
        "self.drop = 0\n        self.drop += 1",  # augmented
    ],
)
def test_writes_to_self_that_are_not_plain_assignments_lint_without_an_internal_error(write: str):
    findings = lint(_BLOCK.replace("WRITE", write))
    assert [f.message for f in findings if f.code == "REM000"] == []


def test_a_lambda_calling_a_checkpoint_through_six_renames_differentiates_it_whole():
    code = "import jax\nimport jax.numpy as jnp\n\ndef loss(p, x):\n    return jnp.mean(jnp.tanh(x @ p))\n\n"
    code += "g0 = jax.checkpoint(loss)\n" + "".join(f"g{i} = g{i - 1}\n" for i in range(1, 7))
    code += "\ndef train_step(p, x):\n    return jax.grad(lambda q: g6(q, x))(p)\n"
    [finding] = lint(code)
    assert (finding.code, finding.start.row) == ("REM101", 7)
    assert finding.message.startswith("The whole function differentiated by `jax.grad` is checkpointed.")
