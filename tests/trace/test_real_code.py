"""Defects met running ``--trace --trace-run`` on public projects' own tests (docs/real-code-trace.md),
each as our own minimal project: what a user sees must be true of the code it names."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.trace.test_discovery import project
from tests.trace_cases import lint

pytest.importorskip("jax")

# flax's tests/nnx/transforms_test.py: a checkpointed function that mutates a BatchStat passed to it
# could not be rebuilt alone (TraceContextError); its checkpoint ran in the test, which passed.
REPLAY_FAILS = """\
    import jax
    import jax.numpy as jnp

    CALLS = []


    def once(x):
        CALLS.append(x)
        if len(CALLS) > 1:  # the run's own call traces; the replay does not
            raise RuntimeError("traced once only")
        return jnp.sin(x)


    flaky = jax.checkpoint(once)  # line 14: applied by the run's grad of flaky_loss


    def flaky_loss(x):
        return jnp.sum(flaky(x))


    def plain(x):
        return jnp.sum(jnp.cos(x))
    """
REPLAY_TESTS = """\
    import jax
    import jax.numpy as jnp

    from pkg.model import flaky_loss, plain


    def test_flaky():
        assert jax.grad(flaky_loss)(jnp.ones(4)).shape == (4,)


    def test_plain():
        assert jax.grad(plain)(jnp.ones(4)).shape == (4,)
    """


def test_a_site_in_a_program_that_failed_to_build_is_not_called_unapplied(tmp_path: Path):
    """One program of the module was rebuilt (plain), the one that applied the checkpoint was not:
    which sites it applied is unknown, so no site of the module is "not applied" (REM402)."""
    root = project(tmp_path, {"pkg/model.py": REPLAY_FAILS, "tests/test_model.py": REPLAY_TESTS})
    command = f"{sys.executable} -m pytest -q -p no:cacheprovider tests"
    proc = lint("--trace", "--trace-run", command, "--output-format", "json", "pkg", cwd=root)
    found = [(f["code"], f["location"]["row"]) for f in json.loads(proc.stdout)]
    assert found == [("REM201", 8)], found  # the append, seen statically; no REM402 at line 14
    assert "no discovery in flaky_loss(f32[4]): the program failed at " in proc.stderr
