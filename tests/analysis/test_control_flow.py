"""REM202 on comparisons of a traced parameter (analysis/control_flow.py): ``==``/``!=`` and the
orderings make a traced bool that Python control flow cannot test; ``is`` never converts a tracer
to bool. The parameter must be a scalar or an array, as its annotation (a string one too) says."""

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


@pytest.mark.parametrize(
    ("annotation", "reported"),
    [("int", True), ('"int"', True), ('"jax.Array"', True), (None, False)],
)
def test_a_parameter_is_known_to_be_a_scalar_or_array_by_its_annotation_even_as_a_string(annotation, reported):
    # Unannotated: the comparison may be on a Python value, so no certain failure.
    source = BODY.format(test="n == 0").replace("n: int", f"n: {annotation}" if annotation else "n")
    assert [(f.code, f.start.row) for f in lint(source)] == ([("REM202", 5)] if reported else [])


def test_an_unannotated_parameter_handed_to_a_helper_that_orders_it_is_reported_at_the_call():
    # An ordering fails on a tracer and on a pytree alike, so the parameter need not be known a scalar.
    source = (
        "import jax\n\n\ndef helper(x, k):\n    if k < 3:\n        return x\n    return x * 2\n\n\n"
        "@jax.checkpoint\ndef f(x, n):\n    return helper(x, n)\n"
    )
    [finding] = lint(source)
    assert (finding.code, finding.start.row) == ("REM202", 12)
    assert finding.message.startswith(
        f"Python `if` in `helper` on `n` fails: `jax.checkpoint` traces `n`. {TRACED_BOOL}"
    )
