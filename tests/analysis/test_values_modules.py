"""The value layer's Module kinds (remat_lint/analysis/values.py): what a Module class or
instance expression is, read directly, one case per form; unknown stays unknown."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from remat_lint.analysis.semantic import SemanticModel
from remat_lint.analysis.values import Values, deferred

PRELUDE = """
import functools
import flax.linen as nn
import equinox as eqx
import haiku as hk
from flax import nnx
from .blocks import Imported
class Base(nn.Module):
    pass
class Block(Base):
    pass
class Plain:
    pass
class N(nnx.Module):
    pass
class H(hk.Module):
    pass
class E(eqx.Module):
    pass
def make():
    return Block
BLOCKS = [Block(i) for i in range(3)]
class M(nn.Module):
    def setup(self):
        self.mlp = nn.Dense(4)
        self.layers = [Block() for _ in range(2)]
    def __call__(self, x):
        for cls in (Block, N):
            pass
        for b in BLOCKS:
            pass
        for layer in self.layers:
            pass
        ins = Imported()
        R = nn.remat(Block)
        y = {expr}
"""


def _evaluate(expr: str) -> list[tuple[str, str | None, str | None]] | None:
    """What the value layer says ``y = <expr>`` (the last statement of ``M.__call__``) holds."""
    model = SemanticModel(cst.parse_module(textwrap.dedent(PRELUDE).replace("{expr}", expr)))
    cls = model.module.body[-1]
    assert isinstance(cls, cst.ClassDef)
    call = cls.body.body[-1]
    assert isinstance(call, cst.FunctionDef)
    line = call.body.body[-1]
    assert isinstance(line, cst.SimpleStatementLine) and isinstance(line.body[0], cst.Assign)
    found = Values(model, imported=deferred).possible(line.body[0].value)
    return None if found is None else [(v.kind, v.qname, v.framework) for v in found]


BLOCK_CLASS = [("module_class", "Block", "flax")]
BLOCK_INSTANCE = [("module_instance", "Block", "flax")]
CASES = {
    "a-class-deriving-from-a-local-module": ("Block", BLOCK_CLASS),
    "an-instance": ("Block(3)", BLOCK_INSTANCE),
    "nnx": ("N", [("module_class", "N", "nnx")]),
    "haiku-instance": ("H()", [("module_instance", "H", "haiku")]),
    "equinox": ("E", [("module_class", "E", "equinox")]),
    "framework-layer": ("nn.Dense", [("module_class", "flax.linen.Dense", "flax")]),
    "getattr-of-a-certain-name": ("getattr(nn, 'Dense')", [("module_class", "flax.linen.Dense", "flax")]),
    "framework-layer-instance": ("nnx.Linear(2, 2, rngs=r)", [("module_instance", "flax.nnx.Linear", "nnx")]),
    "dunder-class": ("Block().__class__", BLOCK_CLASS),
    "type-of-instance": ("type(Block())", BLOCK_CLASS),
    "partial": ("functools.partial(Block, 3)", BLOCK_CLASS),
    "factory": ("make()", BLOCK_CLASS),
    "loop-over-classes": ("cls", [*BLOCK_CLASS, ("module_class", "N", "nnx")]),
    "loop-over-comprehension": ("b", BLOCK_INSTANCE),
    "setup-attribute": ("self.mlp", [("module_instance", "flax.linen.Dense", "flax")]),
    "setup-list-element": ("self.layers[0]", BLOCK_INSTANCE),
    "loop-over-setup-list": ("layer", BLOCK_INSTANCE),
    "remat-of-a-linen-class": ("R", BLOCK_CLASS),
    "instance-of-remat-class": ("R()", BLOCK_INSTANCE),
    "imported-instance": ("ins", [("module_instance", ".blocks.Imported", None)]),
    "class-of-imported-instance": ("type(ins)", [("module_class", ".blocks.Imported", None)]),
}


@pytest.mark.parametrize(("expr", "expected"), CASES.values(), ids=CASES.keys())
def test_a_module_class_or_instance_is_a_value(expr, expected):
    assert _evaluate(expr) == expected


UNKNOWN = {
    "plain-class": "Plain",
    "plain-instance": "Plain()",
    "getattr": "getattr(x, 'Block')",
    "class-of-a-parameter": "type(x)",
    "partial-of-a-plain-class": "functools.partial(Plain, 3)",
}


@pytest.mark.parametrize("expr", UNKNOWN.values(), ids=UNKNOWN.keys())
def test_what_is_not_certainly_a_module_stays_unknown(expr):
    assert _evaluate(expr) is None
