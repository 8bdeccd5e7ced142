"""REM004 on ``name = nn.remat(name)`` where ``name`` holds a Module instance: inside a loop as outside it
(each iteration re-binds the name to a new instance before the wrap)."""

from __future__ import annotations

import pytest

from tests.helpers import lint

MODEL = """\
import flax.linen as nn


class Block(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(4)(x)


class Model(nn.Module):
    @nn.compact
    def __call__(self, x):
{body}
        return x
"""
OUTSIDE = "        block = Block()\n        block = nn.remat(block)\n        x = block(x)"
IN_FOR = "        for _ in range(2):\n            block = Block()\n            block = nn.remat(block)\n            x = block(x)"
IN_WHILE = (
    "        n = 0\n        while n < 2:\n            block = Block()\n            block = nn.remat(block)\n"
    "            x = block(x)\n            n += 1"
)


@pytest.mark.parametrize(
    ("body", "row"), [(OUTSIDE, 14), (IN_FOR, 15), (IN_WHILE, 16)], ids=["outside", "for", "while"]
)
def test_an_instance_wrapped_where_it_is_rebound_is_reported(body: str, row: int) -> None:
    assert [(f.code, f.start.row) for f in lint(MODEL.format(body=body), {"REM004"})] == [("REM004", row)]
