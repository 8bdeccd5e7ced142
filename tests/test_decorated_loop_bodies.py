"""A function decorated as a loop body (``@nnx.scan(...)`` above ``@nnx.remat``) runs once per
layer, so checkpointing it is what the scan wants: REM102 (checkpointed last stage) stays quiet there
and reports the same function undecorated (analysis/loops.py, ``Loops._add_decorated``)."""

from __future__ import annotations

from tests.helpers import lint

SCANNED = """
import jax
from flax import nnx

@nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
@nnx.remat
@jax.named_call
def forward(x, layer):
    return layer(x)

def loss(x, layers):
    return forward(x, layers).sum()

g = jax.grad(loss)
"""


def rem102(code: str) -> list[tuple[int, str]]:
    return [(f.start.row, f.message.split(". ")[0]) for f in lint(code, {"REM102"})]


def test_the_remat_below_a_scan_decorator_is_a_loop_body():
    assert rem102(SCANNED) == []


def test_the_same_remat_without_the_scan_is_the_last_stage():
    plain = SCANNED.replace("@nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)\n", "")
    assert rem102(plain) == [(11, "`forward(...)` is the last stage of `loss`: checkpointing it saves little or no memory")]


def test_only_the_decorators_below_the_scan_are_its_body():
    """A remat above the scan checkpoints the whole scan, which is the last stage."""
    above = SCANNED.replace("@nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)\n@nnx.remat\n",
                            "@nnx.remat\n@nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)\n")
    assert rem102(above) == [(12, "`forward(...)` is the last stage of `loss`: checkpointing it saves little or no memory")]
