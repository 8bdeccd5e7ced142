"""analysis/guards.py through REM202: a checkpointed function whose every call is in a test's
``try`` stays quiet only when the handler names the error the finding predicts, and a function
reached through an attribute (``f.attr()(x)``) is not one of its calls."""

from __future__ import annotations

import pytest

from tests.helpers import lint

BODY = "import jax\nimport pytest\n\n@jax.checkpoint\ndef f(x, n: int):\n    if n == 0:\n        return x\n    return x * n\n\n\n"


def rem202_rows(source: str) -> list[int]:
    return [f.start.row for f in lint(source, path="test_example.py") if f.code == "REM202"]


@pytest.mark.parametrize(
    ("handler", "rows"),
    [
        ("jax.errors.TracerBoolConversionError", []),  # the test of that very error
        ("ValueError", [6]),  # another error: `f` fails where the test does not expect it
    ],
)
def test_a_call_in_a_tests_try_is_a_test_of_the_error_only_when_the_handler_names_it(handler, rows):
    test = f"def test_f():\n    try:\n        f(1.0, 2)\n    except {handler}:\n        pass\n"
    assert rem202_rows(BODY + test) == rows


@pytest.mark.parametrize(
    ("reference", "rows"),
    [
        ("f(1.0, 2)", []),
        ("f.lower(1.0, 2).compile()(1.0, 2)", [6]),
        ("f.__wrapped__(1.0)(2)", [6]),  # an attribute of `f`, not a call: not followed
    ],
)
def test_only_calls_in_pytest_raises_make_a_function_a_test_of_the_error(reference, rows):
    test = (
        "def test_f():\n    with pytest.raises(jax.errors.TracerBoolConversionError):\n        f(1.0, 2)\n"
        f"    with pytest.raises(jax.errors.TracerBoolConversionError):\n        {reference}\n"
    )
    assert rem202_rows(BODY + test) == rows
