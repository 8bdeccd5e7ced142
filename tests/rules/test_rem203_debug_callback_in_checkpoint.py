"""REM203 on a callback reached through a helper: the checkpoint's policy counts, as it does inline."""

from tests.helpers import lint

# Measured (jax 0.10.2): under `grad`, the callback below fires twice with the default policy and once
# with `everything_saveable`, called inline or through `trace` (the program of
# tests/jax_claims/test_bodies.py::callback_count, its callback moved into a helper).
HELPER = """
import functools
import jax
import jax.numpy as jnp

def trace(x):
    jax.debug.callback(record, x[0, 0])

@functools.partial(jax.checkpoint@POLICY@)
def block(x):
    trace(x)
    return jnp.sum(jnp.sin(x @ x.T))
"""


def test_a_helpers_callback_under_everything_saveable_is_quiet() -> None:
    source = HELPER.replace("@POLICY@", ", policy=jax.checkpoint_policies.everything_saveable")
    assert lint(source, {"REM203"}) == []


def test_a_helpers_callback_under_the_default_policy_is_reported_at_the_call() -> None:
    (finding,) = lint(HELPER.replace("@POLICY@", ""), {"REM203"})
    assert finding.start.row == 11
    assert finding.message.startswith(
        "Calls `trace` from a checkpointed function, and its `jax.debug.callback` runs twice"
    )


IO_IN_A_TEST = """
import jax
from jax.experimental import io_callback

def test_fails():
    @jax.checkpoint
    def f(x, y):
        io_callback(save, None, y)
        return x
    try:
        jax.grad(f)(1.0, 2.0)
    except @ERROR@:
        pass
"""


def test_an_io_callback_is_quiet_only_where_a_test_catches_the_error_jax_raises() -> None:
    assert lint(IO_IN_A_TEST.replace("@ERROR@", "NotImplementedError"), {"REM203"}) == []
    (finding,) = lint(IO_IN_A_TEST.replace("@ERROR@", "KeyError"), {"REM203"})
    assert finding.start.row == 8
    assert (
        "`ValueError: IO callbacks do not support JVP.` when its operand depends on a differentiated value"
        in finding.message
    )
    assert (
        "otherwise `NotImplementedError: Effects not supported in partial-eval of checkpoint/remat`" in finding.message
    )
