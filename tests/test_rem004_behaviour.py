"""REM004 (Module instance given to a linen transform): cases found by mutation testing that no
other test pinned."""

from __future__ import annotations

import textwrap

from remat_lint.config import RuleSelection, Settings
from remat_lint.resolver import Resolver
from remat_lint.runner import run

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
    result = run([str(package / "__init__.py"), str(package / "model.py")],
                 Resolver.of(Settings(selection=[RuleSelection(select=("REM004",))])))
    assert [f.message for f in result.findings if f.code == "REM000"] == []
