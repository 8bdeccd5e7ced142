"""REM202 on a checkpoint that also names `static_argnames` (ignored by `jax.checkpoint`: REM010)."""

import pytest

from tests.helpers import lint

SOURCE = """
import functools
import jax

@functools.partial(jax.checkpoint, static_argnames=("mode",))
def f(x, mode):
    if x > 0:
        return x
    return -x
"""


def test_the_other_parameters_are_still_checked() -> None:
    (finding,) = lint(SOURCE, {"REM202"})
    assert finding.start.row == 7
    assert finding.message.startswith("Python `if` on `x > 0` fails: `jax.checkpoint` traces `x`.")


def test_static_argnames_held_in_a_constant_are_read() -> None:
    """``static_argnames=NAMES`` with ``NAMES = ("mode",)``: the value layer reads the names, so the
    other parameters are checked as with the literal."""
    source = SOURCE.replace('static_argnames=("mode",)', "static_argnames=NAMES").replace(
        "import jax\n", 'import jax\nNAMES = ("mode",)\n'
    )
    (finding,) = lint(source, {"REM202"})
    assert finding.start.row == 8
    assert lint(source.replace('NAMES = ("mode",)', "NAMES = load()"), {"REM202"}) == []


DROPOUT_BLOCK = """\
from flax import nnx
RATE
class Block(nnx.Module):
    def __init__(self, rngs):
        self.drop = nnx.Dropout(DROPOUT, rngs=rngs)

    @nnx.remat
    def __call__(self, x, deterministic):
        return self.drop(x, deterministic=deterministic)
"""


@pytest.mark.parametrize(
    ("rate", "rows"),
    [
        ("DROPOUT = 0.1", [9]),
        ("DROPOUT = 0.0", []),  # Dropout returns early at rate 0: the flag is never tested
        ("DROPOUT = 0.1 if big else 0", []),  # may be zero
        ("from config import DROPOUT", []),  # not known in this module
    ],
)
def test_a_dropout_rate_held_in_a_module_constant_is_read(rate: str, rows: list[int]) -> None:
    findings = lint(DROPOUT_BLOCK.replace("RATE", rate), {"REM202"})
    assert [f.start.row for f in findings] == rows


ENUM_FLAG = """\
import enum
import jax


class Phase(enum.Enum):
    TRAIN = 1
    EVAL = 0


def layer(x, phase):
    if phase == Phase.TRAIN.value:
        return x * 0.9
    return x


f = jax.checkpoint(layer)
y = f(x, Phase.TRAIN.value)
"""


def test_a_number_the_value_layer_finds_at_a_call_makes_the_parameter_a_scalar() -> None:
    """``f(x, Phase.TRAIN.value)`` passes the int 1, as ``f(x, 1)`` does: traced, ``phase == 1``
    is a traced bool and ``if`` raises (measured, jax 0.10.2)."""
    (finding,) = lint(ENUM_FLAG, {"REM202"})
    assert finding.start.row == 11
    assert lint(ENUM_FLAG.replace("Phase.TRAIN.value)", "Phase.TRAIN)"), {"REM202"}) == []  # an enum member: no leaf
    static = ENUM_FLAG.replace("jax.checkpoint(layer)", "jax.checkpoint(layer, static_argnums=(1,))")
    assert lint(static, {"REM202"}) == []
