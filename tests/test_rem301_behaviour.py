"""REM301 (opt-in) reports a scan over layers only when its body certainly applies no checkpoint:
array methods count as known calls, other methods do not; a linen `nn.scan` counts as over layers
when it scans the `params` collection, whatever its Module is called; a grad in another module
reaches a scan (a decorated one too, one in a smoke test not); written against surviving mutants."""

from __future__ import annotations

import os

import pytest

from tests.helpers import lint
from tests.test_project import cli, make_project

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



@pytest.mark.parametrize("decorator", [
    "def deco(f):\n    return jax.checkpoint(f)\n@deco\n",  # a local decorator that checkpoints
    "from mylib.remat import remat_block\n@remat_block\n",  # an imported one that may
    "def deco(f):\n    return f\n@deco\n",  # unknown here: it may
])
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
    return [(row, message) for path, row, message in cli(capsys, "--select", "REM301", "--no-cache", ".")
            if path == os.path.join("pkg", "losses.py")]


def test_a_decorated_grad_in_another_module_reaches_the_scan(tmp_path, capsys, monkeypatch):
    train = "import jax\nfrom .losses import forward\n@jax.value_and_grad\ndef loss(ps, x):\n    return forward(ps, x).sum()\n"
    assert _across_modules(tmp_path, capsys, monkeypatch, train) == [
        (3, "REM301 `jax.lax.scan` over layers in code differentiated by `jax.value_and_grad` at train.py:3 has no "
            "checkpoint on its body"),
    ]


def test_a_grad_in_a_smoke_test_of_another_module_does_not_count(tmp_path, capsys, monkeypatch):
    train = "import jax\nfrom .losses import forward\ndef test_forward(ps):\n    jax.grad(forward)(ps, 1.0)\n"
    assert _across_modules(tmp_path, capsys, monkeypatch, train) == []
