"""A ``__main__`` block that computes a gradient once is a module's self-check (REM101 stays quiet);
one that trains (a loop, an optax call, ``apply_gradients``/``apply_updates``) is a script's entry
point and is reported like any other code; a ``with`` block is test code only when it mocks
(``mock.patch...``), not when it enters a mesh or a device (analysis/smoke_tests.py)."""

from __future__ import annotations

import pytest

from tests.helpers import lint

MODULE = """\
import jax
import optax

@jax.checkpoint
def loss(params, x):
    return (params * x).sum()

if __name__ == "__main__":
    params = 1.0
"""


@pytest.mark.parametrize(
    ("main_block", "reported"),
    [
        ("    print(jax.grad(loss)(params, 2.0))\n", False),
        ("    optimizer = optax.adam(1e-3)\n    print(jax.grad(loss)(params, 2.0))\n", True),
        ("    grads = jax.grad(loss)(params, 2.0)\n    params = opt.apply_updates(params, grads)\n", True),
        ("    grads = jax.grad(loss)(params, 2.0)\n    state = state.apply_gradients(grads=grads)\n", True),
        ("    grads = jax.grad(loss)(params, 2.0)\n    params = state.update(params, grads)\n", False),
        ("    grads = jax.grad(loss)(params, 2.0)\n    for _ in range(3):\n        pass\n", True),
        ("    grads = jax.grad(loss)(params, 2.0)\n    while params < 3.0:\n        params += 1.0\n", True),
    ],
    ids=["grad-once", "optax-call", "apply_updates", "apply_gradients", "other-method", "for-loop", "while-loop"],
)
def test_a_main_block_is_reported_only_when_it_trains(main_block, reported):
    found = [(f.code, f.start.row) for f in lint(MODULE + main_block)]
    assert found == ([("REM101", 4)] if reported else [])


@pytest.mark.parametrize(
    ("context", "reported"),
    [
        ("mesh", True),
        ("jax.default_device(cpu)", True),
        ("mock.patch('train.log')", False),
        ("unittest.mock.patch.object(jax, 'checkpoint', wraps=jax.checkpoint)", False),
    ],
)
def test_a_with_block_is_test_code_only_when_it_mocks(context, reported):
    source = "import unittest.mock\nfrom unittest import mock\n" + MODULE.split("if __name__")[0]
    source += f"with {context}:\n    grads = jax.grad(loss)(1.0, 2.0)\n"
    assert [(f.code, f.start.row) for f in lint(source)] == ([("REM101", 6)] if reported else [])
