"""REM013 reports `nnx.remat` on an NNX Module class only when the name certainly is that class,
and follows the same depth of base classes whether the class or its `__init__` is wrapped;
written against surviving mutants."""

from __future__ import annotations

from tests.helpers import lint


def test_a_name_that_may_be_another_object_is_not_reported():
    source = (
        "from flax import nnx\nif flag:\n    Block = make()\nelse:\n    class Block(nnx.Module):\n        pass\n"
        "R = nnx.remat(Block)\n"
    )
    assert lint(source, {"REM013"}) == []


def test_a_class_defined_under_a_condition_and_rebound_after_the_wrap_is_reported():
    source = "from flax import nnx\nif flag:\n    class Block(nnx.Module):\n        pass\nR = nnx.remat(Block)\nBlock = None\n"
    [finding] = lint(source, {"REM013"})
    assert finding.start.row == 5
    assert finding.message.startswith("`nnx.remat` on the Module class `Block` checkpoints only its constructor")


def _chain(levels: int) -> str:
    """``C0(nnx.Module)`` and ``levels - 1`` subclasses, each of the one before."""
    classes = ["class C0(nnx.Module):\n    pass\n"]
    classes += [f"class C{i}(C{i - 1}):\n    pass\n" for i in range(1, levels)]
    return "from flax import nnx\n" + "".join(classes)


def test_the_class_and_its_init_are_followed_through_the_same_depth_of_bases():
    top = "C15"
    wrapped_class = _chain(16) + f"R = nnx.remat({top})\n"
    wrapped_init = _chain(15) + f"class {top}(C14):\n    @nnx.remat\n    def __init__(self, rngs):\n        pass\n"
    [on_class] = lint(wrapped_class, {"REM013"})
    [on_init] = lint(wrapped_init, {"REM013"})
    assert on_class.message.startswith(f"`nnx.remat` on the Module class `{top}` checkpoints only its constructor")
    assert on_init.message.startswith(f"`nnx.remat` on `{top}.__init__` checkpoints only the constructor")
