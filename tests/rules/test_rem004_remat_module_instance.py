"""REM004 (Module instance given to a linen transform): cases found by mutation testing that no
other test pinned."""

from __future__ import annotations

import textwrap

import pytest

from remat_lint.config.resolver import Resolver
from remat_lint.config.settings import RuleSelection, Settings
from remat_lint.engine.runner import run
from tests.helpers import lint

PACKAGE_INIT = """
import flax.linen as nn

class Block(nn.Module):
    features: int

    @nn.compact
    def __call__(self, x):
        return nn.Dense(self.features)(x)
"""
MODEL = """
import flax.linen as nn
from . import Block

R = nn.remat(Block(4))
"""


def test_an_instance_of_a_class_imported_from_the_package_itself_lints_without_an_internal_error(tmp_path) -> None:
    """``from . import Block`` names the class without a module part (``Block``, not ``layers.Block``)."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent(PACKAGE_INIT))
    (package / "model.py").write_text(textwrap.dedent(MODEL))
    result = run(
        [str(package / "__init__.py"), str(package / "model.py")],
        Resolver.of(Settings(selection=[RuleSelection(select=("REM004",))])),
    )
    assert [f.message for f in result.findings if f.code == "REM000"] == []


# REM004 on ``name = nn.remat(name)`` where ``name`` holds a Module instance: inside a loop as outside it
# (each iteration re-binds the name to a new instance before the wrap).

LOOP_MODEL = """\
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
    assert [(f.code, f.start.row) for f in lint(LOOP_MODEL.format(body=body), {"REM004"})] == [("REM004", row)]


COMPREHENSION = "        outs = [nn.remat(b)(x) for b in {blocks}]\n        x = outs[0]"


@pytest.mark.parametrize(
    ("blocks", "found"),
    [("[Block(), Block()]", ["REM004"]), ("(Block(), Block())", ["REM004"]), ("[Block, Block]", [])],
    ids=["list-of-instances", "tuple-of-instances", "classes"],
)
def test_a_comprehension_variable_holds_the_elements_of_the_collection(blocks: str, found: list[str]) -> None:
    source = LOOP_MODEL.format(body=COMPREHENSION.format(blocks=blocks))
    assert [f.code for f in lint(source, {"REM004"})] == found
