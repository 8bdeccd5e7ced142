"""REM101 leaves linen's remat alone (it lifts a Module class or a function taking the Module; a
grad does not take it whole as it takes a `jax.checkpoint`); written against surviving mutants."""

from __future__ import annotations

import pytest

from tests.helpers import lint


@pytest.mark.parametrize(
    "code",
    [
        "import flax.linen as nn, jax\ng = jax.value_and_grad(nn.remat(loss))\n",
        "import flax.linen.partitioning as nnp, jax\ng = jax.value_and_grad(nnp.remat(loss))\n",
        "import flax.linen as nn, jax\n@jax.value_and_grad\n@nn.remat\ndef loss(p, x):\n    return (p * x).sum()\n",
    ],
    ids=["nn.remat", "nn_partitioning.remat", "decorators"],
)
def test_a_linen_remat_under_a_grad_is_quiet(code):
    assert lint(code, {"REM101"}) == []


def test_the_same_with_jax_checkpoint_is_reported():
    [finding] = lint("import jax\ng = jax.value_and_grad(jax.checkpoint(loss))\n", {"REM101"})
    assert finding.message.startswith("The whole function differentiated by `jax.value_and_grad` is checkpointed.")
