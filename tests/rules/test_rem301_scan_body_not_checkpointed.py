"""REM301 across modules on one staged file (what pre-commit passes): the scan's module is linted
alone and the project's other files are read for the grad that reaches it. The whole-project run
and flake8 are checked on the same fixture by tests/rules/test_fixture_annotations.py and the snapshots."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from remat_lint.cli.command import main
from remat_lint.project.summary import ModuleSummary
from tests.analysis.test_project import cli, make_project
from tests.helpers import lint

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "xmod_scan_linen"


def staged(capsys: pytest.CaptureFixture[str], path: str) -> list[tuple[int, str]]:
    """(row, message) of each finding of ``remat-lint --select REM301`` on ``path`` alone."""
    main(["--select", "REM301", "--no-cache", "--output-format", "concise", "-q", path])
    return [(int(line.split(":")[1]), line.split(" REM301 ")[1]) for line in capsys.readouterr().out.splitlines()]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(FIXTURE, tmp_path, dirs_exist_ok=True)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_linen_module_class_reached_from_another_modules_grad(project, capsys):
    assert staged(capsys, "pkg/layers.py") == [
        (18, "`nn.scan` over layers in code differentiated by `jax.grad` at train.py:32 has no checkpoint on its body"),
        (26, "`nn.scan` over layers in code differentiated by `jax.grad` at train.py:33 has no checkpoint on its body"),
        # StackDecoder: train.py builds the Transformer whose setup builds it
        (47, "`nn.scan` over layers in code differentiated by `jax.grad` at train.py:42 has no checkpoint on its body"),
        # DeepDecoder: train.py builds nets.Seq2Seq, whose setup builds it (DeepEncoder: nets.Featurizer, run forward)
        (61, "`nn.scan` over layers in code differentiated by `jax.grad` at train.py:57 has no checkpoint on its body"),
    ]


def test_a_scan_in_a_module_that_differentiates_something_else(project, capsys):
    assert [row for row, _ in staged(capsys, "pkg/model.py")] == [12]


def test_quiet_once_the_grads_are_gone(project, capsys):
    train = project / "pkg" / "train.py"
    train.write_text(train.read_text().split("decoder_grad =")[0])  # the losses stay, nothing differentiates them
    assert staged(capsys, "pkg/layers.py") == []
    assert staged(capsys, "pkg/model.py") == []


def test_files_naming_the_classes_that_build_a_class_are_read_next():
    """The project pass reads next the files naming what calls a candidate's symbol: a class whose
    method builds it (nets.Seq2Seq for layers.DeepDecoder), not every class calling a function
    (``nn.remat`` in a method would draw in most of a large project: flax's own repository)."""
    nets = ModuleSummary(
        calls={
            "Seq2Seq": [(0, "pkg.layers.DeepDecoder")],
            "Model": [(0, "flax.linen.remat")],
            "helper": [(0, "flax.linen.remat")],
        },
        bases={"Seq2Seq": [(0, "flax.linen.Module")], "Model": [(0, "flax.linen.Module")]},
    )
    assert nets.related_names(frozenset({"DeepDecoder"})) == {"Seq2Seq"}
    assert nets.related_names(frozenset({"remat"})) == {"helper"}


# REM301 (opt-in) reports a scan over layers only when its body certainly applies no checkpoint:
# array methods count as known calls, other methods do not; a linen `nn.scan` counts as over layers
# when it scans the `params` collection, whatever its Module is called; a grad in another module
# reaches a scan (a decorated one too, one in a smoke test not); written against surviving mutants.

SCAN = "def f(ps, x):\n    return jax.lax.scan(layer, x, ps['layers'])[0].sum()\ng = jax.grad(f)\n"


def _found(code: str) -> list[tuple[int, int, str]]:
    return [(f.start.row, f.start.column, f.message) for f in lint(code, {"REM301"})]


def test_a_body_calling_only_array_methods_is_reported():
    code = "import jax\ndef layer(c, p):\n    return (c @ p).astype(c.dtype), None\n" + SCAN
    [(row, column, message)] = _found(code)
    assert (row, column) == (5, 11)
    assert message.startswith("`jax.lax.scan` over layers in differentiated code has no checkpoint on its body.")


def test_a_body_calling_a_method_that_may_checkpoint_inside_is_quiet():
    assert _found("import jax\ndef layer(c, p):\n    return c.block(p), None\n" + SCAN) == []


@pytest.mark.parametrize(
    "decorator",
    [
        "def deco(f):\n    return jax.checkpoint(f)\n@deco\n",  # a local decorator that checkpoints
        "from mylib.remat import remat_block\n@remat_block\n",  # an imported one that may
        "def deco(f):\n    return f\n@deco\n",  # unknown here: it may
    ],
)
def test_a_body_under_a_decorator_that_may_checkpoint_it_is_quiet(decorator):
    assert _found(f"import jax\n{decorator}def layer(c, p):\n    return c @ p, None\n" + SCAN) == []


def test_a_body_under_a_jax_decorator_that_does_not_checkpoint_is_reported():
    [(row, _, _)] = _found("import jax\n@jax.named_call\ndef layer(c, p):\n    return c @ p, None\n" + SCAN)
    assert row == 6


LINEN = """\
import flax.linen as nn
import jax
class Cell(nn.Module):
    @nn.compact
    def __call__(self, x, _):
        return nn.Dense(4)(x), None
class Stack(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.scan(Cell, variable_axes={AXES}, split_rngs={{'params': True}}, length=4)()(x, None)
g = jax.grad(lambda v, x: Stack().apply(v, x)[0].sum())
"""


@pytest.mark.parametrize(("axes", "rows"), [("{'params': 0}", [10]), ("{'cache': 0}", [])], ids=["params", "cache"])
def test_a_linen_scan_is_over_layers_when_it_scans_params(axes, rows):
    assert [row for row, _, _ in _found(LINEN.format(AXES=axes))] == rows


MODEL = "import jax\ndef forward(ps, x):\n    return jax.lax.scan(layer, x, ps['layers'])[0]\ndef layer(c, p):\n    return c @ p, None\n"


def _across_modules(tmp_path, capsys, monkeypatch, train: str) -> list[tuple[int, str]]:
    """REM301's findings in pkg/model.py, the project linted whole, with ``train`` as pkg/train.py."""
    make_project(tmp_path, train, losses=MODEL)
    monkeypatch.chdir(tmp_path)
    return [
        (row, message)
        for path, row, message in cli(capsys, "--select", "REM301", "--no-cache", ".")
        if path == os.path.join("pkg", "losses.py")
    ]


def test_a_decorated_grad_in_another_module_reaches_the_scan(tmp_path, capsys, monkeypatch):
    train = "import jax\nfrom .losses import forward\n@jax.value_and_grad\ndef loss(ps, x):\n    return forward(ps, x).sum()\n"
    assert _across_modules(tmp_path, capsys, monkeypatch, train) == [
        (
            3,
            "REM301 `jax.lax.scan` over layers in code differentiated by `jax.value_and_grad` at train.py:3 has no "
            "checkpoint on its body",
        ),
    ]


def test_a_grad_in_a_smoke_test_of_another_module_does_not_count(tmp_path, capsys, monkeypatch):
    train = "import jax\nfrom .losses import forward\ndef test_forward(ps):\n    jax.grad(forward)(ps, 1.0)\n"
    assert _across_modules(tmp_path, capsys, monkeypatch, train) == []


# What the body does with its carry and its slice decides "over layers", never a name: the same
# program is reported or not whatever its functions and variables are called.
SCANNED = "def f(ps, x):\n    return jax.lax.scan({body}, x, ps)[0].sum()\ng = jax.grad(f)\n"


@pytest.mark.parametrize(
    "body",
    [
        "def cell(h, x):\n    return h @ x, h\n",  # the slice multiplies the carry: a layer, named "cell"
        "def cell(h, x):\n    w = x['w']\n    return jnp.einsum('ij,jk->ik', h, w), None\n",
        "def cell(h, x):\n    return helper(x, h), None\ndef helper(a, b):\n    return jnp.dot(b, a)\n",
        "def cell(h, xs):\n    for x in xs:\n        h = h @ x\n    return h, None\n",
    ],
    ids=["matmul", "einsum", "helper", "loop"],
)
def test_a_body_applying_its_slice_to_its_carry_is_over_layers(body):
    code = f"import jax\nimport jax.numpy as jnp\n{body}" + SCANNED.format(body="cell")
    assert [row for row, _, _ in _found(code)] == [
        code.splitlines().index("    return jax.lax.scan(cell, x, ps)[0].sum()") + 1
    ]


@pytest.mark.parametrize(
    "body",
    [
        "def block(c, w):\n    return c * w, c\n",  # elementwise with the slice: a time step, named "block"
        "def layer(c, weights):\n    return jnp.tanh(c @ W + weights), c\n",  # W bound outside, the slice added
    ],
    ids=["elementwise", "bound-weights"],
)
def test_a_body_that_does_not_apply_its_slice_as_weights_is_quiet(body):
    code = f"import jax\nimport jax.numpy as jnp\nW = jnp.ones((4, 4))\n{body}" + SCANNED.format(
        body=body.split("(")[0].removeprefix("def ")
    )
    assert _found(code) == []
