"""REM202 on a checkpoint that also names `static_argnames` (ignored by `jax.checkpoint`: REM010)."""

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
