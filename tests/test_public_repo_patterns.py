"""False alarms found by linting public JAX repositories stay fixed: the quiet fixture is correct code
(it runs and differentiates), and the analysis that quiets it still reports the unsafe neighbours."""

from __future__ import annotations

import runpy
from pathlib import Path

from tests.helpers import codes

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


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
    assert codes(
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
    ) == []
