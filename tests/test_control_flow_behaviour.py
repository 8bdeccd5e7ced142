"""REM202 on comparisons of a traced parameter (analysis/control_flow.py): ``==``/``!=`` and the
orderings make a traced bool that Python control flow cannot test; ``is`` never converts a tracer
to bool."""

from __future__ import annotations

import pytest

from tests.helpers import lint

BODY = "import jax\n\n@jax.checkpoint\ndef f(x, n: int):\n    if {test}:\n        return x\n    return x * n\n"
TRACED_BOOL = (
    "It is not in `static_argnums`, and the comparison is a traced bool, and testing it raises "
    "`TracerBoolConversionError` at every call; make it static with `static_argnums=(1,)`"
)


@pytest.mark.parametrize("test", ["n == 0", "n != 0", "0 == n", "n < 3", "1 <= n < 3"])
def test_a_comparison_of_a_traced_parameter_in_an_if_is_reported(test):
    [finding] = [f for f in lint(BODY.format(test=test)) if f.code in ("REM202", "REM000")]
    assert (finding.code, finding.start.row) == ("REM202", 5)
    assert finding.message.startswith(f"Python `if` on `{test}` fails: `jax.checkpoint` traces `n`. {TRACED_BOOL}")


@pytest.mark.parametrize("test", ["n is None", "n is not None"])
def test_identity_tests_are_quiet(test):
    assert [f.code for f in lint(BODY.format(test=test))] == []
