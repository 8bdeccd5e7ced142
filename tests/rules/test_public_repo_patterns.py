"""False alarms found by linting public JAX repositories stay fixed: the quiet fixture is correct code
(it runs and differentiates), and the analysis that quiets it still reports the unsafe neighbours."""

from __future__ import annotations

import runpy
from pathlib import Path

from tests.helpers import codes

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_public_repo_quiet_fixture_is_correct_code():
    runpy.run_path(str(FIXTURES / "quiet" / "public_repo_patterns.py"), run_name="__main__")


def test_side_channel_of_an_escaping_checkpoint_is_reported():
    # The closure outlives the call that made the list: a later call reuses the cached trace.
    assert codes(
        """
        import jax

        def make():
            seen = []

            @jax.checkpoint
            def body(x):
                seen.append(x)
                return x

            return body
        """
    ) == ["REM201"]


def test_side_channel_of_a_checkpoint_wrapped_by_partial_is_reported():
    # ``partial`` does not call the checkpointed function: it may run anywhere, any number of times.
    assert codes(
        """
        import functools
        import jax

        def make():
            seen = []

            def inner(x, y):
                seen.append(x)
                return x

            return functools.partial(jax.checkpoint(inner), 1.0)
        """
    ) == ["REM201"]


def test_side_channel_of_a_checkpoint_handed_to_scan_is_quiet():
    assert (
        codes(
            """
        import jax

        def run(carry, xs):
            seen = []

            def body(c, x):
                seen.append(x.shape)
                return c, None

            step = body
            step = jax.checkpoint(body)
            return jax.lax.scan(step, carry, xs), seen
        """
        )
        == []
    )


def test_a_context_manager_that_prints_is_still_reported():
    # Entry/exit undoes state changes, not output: the print runs once per trace.
    assert codes(
        """
        import contextlib
        import jax

        @contextlib.contextmanager
        def scope(name):
            print("entering", name)
            yield

        @jax.checkpoint
        def f(x):
            with scope("f"):
                return x
        """
    ) == ["REM201"]


def test_state_set_by_a_helper_called_outside_a_with_is_still_reported():
    assert codes(
        """
        import jax

        STACK = []

        def push(name):
            STACK.append(name)

        @jax.checkpoint
        def f(x):
            push("f")
            return x
        """
    ) == ["REM201"]


# Tests of an error define the broken code and call it inside ``pytest.raises`` (JAX's and Flax's
# own test suites): what only runs there is deliberate, as at a site inside the block itself.
ERROR_TESTS = """
import flax.linen as nn
import jax
import pytest
from flax import errors
from jax.experimental import io_callback


def test_io_callback_fails_under_grad():
    @jax.grad
    @jax.checkpoint
    def f(x, y):
        io_callback(print, None, y)
        return x

    with pytest.raises(NotImplementedError):
        f(2.0, 3.0)


def test_io_callback_fails_under_grad_applied_in_the_block():
    @jax.checkpoint
    def g(x, y):
        io_callback(print, None, y)
        return x

    with pytest.raises(NotImplementedError):
        jax.grad(g)(2.0, 3.0)


def test_instance_is_rejected():
    class Foo(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.remat(nn.Dense(2))(x)

    with pytest.raises(errors.TransformTargetError):
        Foo().init(jax.random.key(0), jax.numpy.ones((1, 2)))
"""


def test_code_only_run_where_its_error_is_expected_is_quiet():
    assert codes(ERROR_TESTS) == []


def test_code_also_used_outside_the_expecting_block_is_reported():
    source = (
        ERROR_TESTS.replace("        f(2.0, 3.0)", "        f(2.0, 3.0)\n    return f")
        .replace("jax.grad(g)(2.0, 3.0)", "jax.grad(g)(2.0, 3.0)\n    step = jax.grad(g)")
        .replace(
            "        Foo().init(jax.random.key(0), jax.numpy.ones((1, 2)))",
            "        Foo().init(jax.random.key(0), jax.numpy.ones((1, 2)))\n    Foo()",
        )
    )
    assert sorted(codes(source)) == ["REM004", "REM203", "REM203"]
