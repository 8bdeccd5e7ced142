"""What ``analysis/linen.py`` takes for a Flax linen Module class (the value layer's answer), seen
through REM009's findings; written against surviving mutants (docs/mutation-testing.md)."""

from __future__ import annotations

import pytest

from tests.helpers import lint

_BLOCK = """\
import functools
import jax
import flax.linen as nn

class Block(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(4)(x)

def make(cls):
    return cls

g = jax.checkpoint(TARGET)
"""


def _rem009(target: str) -> list[int]:
    return [f.start.row for f in lint(_BLOCK.replace("TARGET", target)) if f.code == "REM009"]


@pytest.mark.parametrize("target", ["Block", "nn.remat(Block)", "functools.partial(Block)", "type(Block())"])
def test_jax_checkpoint_of_a_module_class_or_its_flax_remat_is_reported(target: str):
    assert _rem009(target) == [13]


@pytest.mark.parametrize(
    "target",
    [
        "make(Block)",  # what a function returns of its parameter is unknown
        "nn.remat(make)",  # the Flax remat of a function is a function
    ],
)
def test_a_class_passed_through_a_call_is_not_certainly_a_module_class(target: str):
    assert _rem009(target) == []


_RELOADED = """\
import jax
import flax.linen as nn

class Block(nn.Module):
    pass

USE

def reload():
    global Block
    Block = load_block()
"""


@pytest.mark.parametrize("use", ["g = jax.checkpoint(Block)", "Block = nn.remat(Block)\ng = jax.checkpoint(Block)"])
def test_a_name_a_function_rebinds_through_global_may_hold_anything(use: str):
    """The semantic model lets a ``global`` binding in a function reach any use: unknown."""
    assert lint(_RELOADED.replace("USE", use)) == []


def test_a_name_rebound_to_the_flax_remat_of_its_class_is_still_a_module_class():
    code = _RELOADED.split("def reload")[0].replace("USE", "Block = nn.remat(Block)\ng = jax.checkpoint(Block)")
    assert [(f.code, f.start.row) for f in lint(code)] == [("REM009", 8)]


def _chain(classes: int) -> str:
    """C0(nn.Module), C1(C0), ... and jax.checkpoint of the last."""
    code = "import jax\nimport flax.linen as nn\nclass C0(nn.Module):\n    pass\n"
    code += "".join(f"class C{i}(C{i - 1}):\n    pass\n" for i in range(1, classes))
    return code + f"g = jax.checkpoint(C{classes - 1})\n"


def test_module_bases_are_followed_through_seventeen_local_classes_and_no_more():
    assert [f.code for f in lint(_chain(17))] == ["REM009"]  # module_classes.module_family's depth
    assert lint(_chain(18)) == []


_SETUP = """\
import jax
import flax.linen as nn

class Model(nn.Module):
    use_dense: bool = True

    def setup(self):
        if self.use_dense:
            self.block = nn.Dense(4)
        else:
            self.block = OTHER

    def __call__(self, x):
        return jax.checkpoint(self.block)(x)
"""


def test_an_attribute_setup_assigns_modules_on_every_path_is_a_module_instance():
    [finding] = lint(_SETUP.replace("OTHER", "nn.Dense(8)"))
    assert (finding.code, finding.start.row) == ("REM009", 14)
    assert "applied to the Flax Module instance `self.block`" in finding.message


def test_an_attribute_setup_assigns_a_module_on_one_path_only_is_not_certainly_one():
    assert lint(_SETUP.replace("OTHER", "make_block()")) == []


def test_setup_inherited_from_a_local_base_module_is_read():
    code = """\
import jax
import flax.linen as nn

class Base(nn.Module):
    def setup(self):
        self.block = nn.Dense(4)

class Model(Base):
    def __call__(self, x):
        return jax.checkpoint(self.block)(x)
"""
    assert [(f.code, f.start.row) for f in lint(code)] == [("REM009", 10)]


def test_only_writes_to_self_in_setup_count_as_the_attribute():
    code = """\
import jax
import flax.linen as nn

class Model(nn.Module):
    def setup(self):
        self.block = nn.Dense(4)
        shared.block = make_block()

    def __call__(self, x):
        return jax.checkpoint(self.block)(x)
"""
    assert [(f.code, f.start.row) for f in lint(code)] == [("REM009", 10)]


@pytest.mark.parametrize(
    "code",
    [
        # blocks a call returns, looped over and indexed: not known to be Module instances
        "class Model(nn.Module):\n    def __call__(self, x):\n        for block in make_blocks():\n"
        "            x = jax.checkpoint(block)(x)\n        return jax.checkpoint(make_blocks()[0])(x)\n",
        # a setup that is not a def of the class
        "def shared_setup(self):\n    self.block = nn.Dense(4)\n\nclass Model(nn.Module):\n    setup = shared_setup\n\n"
        "    def __call__(self, x):\n        return jax.checkpoint(self.block)(x)\n",
    ],
)
def test_modules_that_cannot_be_resolved_are_left_alone(code: str):
    assert lint("import jax\nimport flax.linen as nn\n\n" + code) == []
