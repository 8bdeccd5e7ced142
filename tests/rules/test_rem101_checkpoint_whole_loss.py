"""REM101 leaves linen's remat alone (it lifts a Module class or a function taking the Module; a
grad does not take it whole as it takes a `jax.checkpoint`), in the module and across modules; a grad
with `has_aux` in another module is worded as such; written against surviving mutants."""

from __future__ import annotations

import pytest

from tests.helpers import lint
from tests.project_messages import project_messages


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


@pytest.mark.parametrize(("remat", "rows"), [("nn.remat", []), ("jax.checkpoint", [4])])
def test_across_modules_a_linen_remat_differentiated_whole_is_quiet(tmp_path, capsys, monkeypatch, remat, rows):
    files = {
        "pkg/__init__.py": "",
        "pkg/losses.py": f"import flax.linen as nn, jax\ndef _loss(p, x):\n    return (p * x).sum()\nloss = {remat}(_loss)\n",
        "pkg/train.py": "import jax\nfrom pkg.losses import loss\ng = jax.value_and_grad(loss)\n",
    }
    assert [row for _, row, _ in project_messages(tmp_path, capsys, monkeypatch, files, "REM101")] == rows


def test_across_modules_a_grad_with_has_aux_names_the_auxiliary_outputs(tmp_path, capsys, monkeypatch):
    files = {
        "pkg/__init__.py": "",
        "pkg/losses.py": "import jax\ndef _loss(p, x):\n    return (p * x).sum(), x\nloss = jax.checkpoint(_loss)\n",
        "pkg/train.py": "import jax\nfrom pkg.losses import loss\ng = jax.grad(loss, has_aux=True)\n",
    }
    [(_, row, message)] = project_messages(tmp_path, capsys, monkeypatch, files, "REM101")
    assert row == 4
    assert message == (
        "REM101 The whole function differentiated by `jax.grad` at train.py:3 is checkpointed. As a result the forward "
        "pass runs twice, once for the auxiliary outputs (`has_aux`) and again inside the backward pass (measured on "
        "JAX 0.10.2: +33-35 % FLOPs), and no memory is saved; checkpoint the layers or blocks inside it instead"
    )
