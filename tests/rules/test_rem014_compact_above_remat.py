"""REM014 goes on past a method whose decorators are in the right order; written against a
surviving mutant."""

from __future__ import annotations

from tests.helpers import lint

RIGHT_THEN_WRONG = (
    "import flax.linen as nn\n"
    "class A(nn.Module):\n    @nn.remat\n    @nn.compact\n    def __call__(self, x):\n        return nn.Dense(4)(x)\n"
    "class B(nn.Module):\n    @nn.compact\n    @nn.remat\n    def __call__(self, x):\n        return nn.Dense(4)(x)\n"
)


def test_a_method_in_the_right_order_does_not_hide_a_later_one_in_the_wrong_order():
    [finding] = lint(RIGHT_THEN_WRONG, {"REM014"})
    assert (finding.start.row, finding.start.column) == (8, 4)
    assert finding.message.startswith("`@nn.compact` above `@nn.remat` marks the remat wrapper, so `init` raises")
