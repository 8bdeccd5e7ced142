"""REM003 (policy misuse): each check stays quiet where the code expects the very error it predicts,
and reports the same code where another error is expected (found by mutation testing: a
misspelled exception name kept the check quiet nowhere, or everywhere)."""

from __future__ import annotations

import pytest

from tests.helpers import lint

GUARDED = """
from jax import checkpoint_policies as cp
try:
    {line}
except {error}:
    p = None
"""

# (the misuse, the error JAX raises on it)
MISUSES = [
    ("p = cp.dots_saveable()", "TypeError"),
    ("p = cp.save_only_these_names(['q', 'k'])", "TypeError"),
    ("p = cp.save_from_both_policies(cp.dots_saveable)", "TypeError"),
    ("g = jax.checkpoint(f, policy=cp.save_only_these_names)", "TypeError"),
    ("p = cp.dots_savable", "AttributeError"),
    (
        "p = cp.save_and_offload_only_these_names(names_which_can_be_saved=['a'], names_which_can_be_offloaded=['a'], "
        "offload_src='device', offload_dst='pinned_host')",
        "ValueError",
    ),
    (
        "p = cp.save_from_both_policies(cp.dots_saveable, cp.offload_dot_with_no_batch_dims('device', 'pinned_host'))",
        "ValueError",
    ),
]


def rem003(line: str, error: str) -> list[str]:
    return [f.message for f in lint("import jax\n" + GUARDED.format(line=line, error=error), {"REM003"})]


@pytest.mark.parametrize(("line", "error"), MISUSES)
def test_quiet_where_the_predicted_error_is_caught(line: str, error: str) -> None:
    assert rem003(line, error) == []


@pytest.mark.parametrize(("line", "error"), MISUSES)
def test_reported_where_another_error_is_caught(line: str, error: str) -> None:
    other = "KeyError"
    assert len(rem003(line, other)) == 1


# What JAX 0.10.2 raises on each call (checked by calling it), as the message quotes it.
WRONG_ARGUMENTS = [
    (
        "cp.save_from_both_policies(cp.dots_saveable, cp.dots_saveable, cp.nothing_saveable)",
        "`TypeError: save_from_both_policies() takes 2 positional arguments but 3 were given`",
    ),
    (
        "cp.save_from_both_policies(cp.dots_saveable)",
        "`TypeError: save_from_both_policies() missing 1 required positional argument`",
    ),
    (
        "cp.offload_dot_with_no_batch_dims()",
        "`TypeError: offload_dot_with_no_batch_dims() missing 2 required positional arguments`",
    ),
    (
        "cp.save_and_offload_only_these_names(['a'])",
        "`TypeError: save_and_offload_only_these_names() takes 0 positional arguments but 1 was given`; "
        "pass every argument by keyword",
    ),
    (
        "cp.save_and_offload_only_these_names(['a'], ['b'])",
        "`TypeError: save_and_offload_only_these_names() takes 0 positional arguments but 2 were given`; "
        "pass every argument by keyword",
    ),
    (
        "cp.save_and_offload_only_these_names(names_which_can_be_saved=['a'], names_which_can_be_offloaded=[])",
        "`TypeError: save_and_offload_only_these_names() missing 2 required keyword-only arguments`: "
        "`offload_src`, `offload_dst`",
    ),
    (
        "cp.save_from_both_policies(cp.dots_saveable, cp.dots_saveable, extra=1)",
        "`TypeError: save_from_both_policies() got an unexpected keyword argument 'extra'`",
    ),
]


@pytest.mark.parametrize(("call", "raised"), WRONG_ARGUMENTS)
def test_wrong_arguments_name_what_jax_raises(call: str, raised: str) -> None:
    [finding] = lint(f"from jax import checkpoint_policies as cp\np = {call}\n", {"REM003"})
    assert finding.message.endswith(f"and this call raises {raised}")


def test_an_attribute_probed_with_getattr_and_a_default_is_not_reported() -> None:
    """Feature detection of a newer JAX: ``getattr(cp, name, None)`` guards the later ``cp.name``."""
    probed = """
    from jax import checkpoint_policies as cp
    if getattr(cp, 'save_from_both_policies_v2', None) is not None:
        policy = cp.save_from_both_policies_v2
    """
    assert lint(probed, {"REM003"}) == []
    without_default = probed.replace(", None)", ")")  # raises AttributeError itself: no detection
    assert [f.code for f in lint(without_default, {"REM003"})] == ["REM003", "REM003"]


def _rem003_rows(code: str) -> list[int]:
    return [f.start.row for f in lint("import jax\nfrom jax import checkpoint_policies as cp\n" + code, {"REM003"})]


@pytest.mark.parametrize(
    "code",
    [
        "OFF = {'o': cp.offload_dot_with_no_batch_dims('device', 'pinned_host')}\n"
        "p = cp.save_from_both_policies(cp.dots_saveable, OFF['o'])",
        "def off():\n    return cp.offload_dot_with_no_batch_dims('device', 'pinned_host')\n"
        "p = cp.save_from_both_policies(cp.dots_saveable, off())",
    ],
    ids=["table-entry", "helper"],
)
def test_an_offloading_policy_is_found_through_the_value_layer(code: str) -> None:
    """``save_from_both_policies`` of an offloading policy held in a table or returned by a helper."""
    assert _rem003_rows(code) == [code.count("\n") + 3]


def test_a_tuple_of_names_is_found_through_a_loop_variable() -> None:
    code = "for names in (('q', 'k'),):\n    p = cp.save_only_these_names(names)"
    assert _rem003_rows(code) == [4]
    assert _rem003_rows(code.replace("(('q', 'k'),)", "(('q', 'k'), 'v')")) == []  # may be one name


LOOP_OVER_FACTORIES = """\
import jax
from jax import checkpoint_policies as cp
wrapped = []
for factory in (cp.save_only_these_names, cp.save_any_names_but_these):
    wrapped.append(jax.checkpoint(f, policy=factory))
"""


def test_a_loop_variable_over_two_factories_is_one_used_uncalled() -> None:
    (finding,) = lint(LOOP_OVER_FACTORIES, {"REM003"})
    assert finding.start.row == 5
    assert "raises `TypeError: save_any_names_but_these / save_only_these_names() got an unexpected keyword" in (
        finding.message
    )
    assert finding.message.endswith("call it: `factory('name', ...)`")
    called = LOOP_OVER_FACTORIES.replace("policy=factory)", 'policy=factory("h"))')
    assert lint(called, {"REM003"}) == []
    mixed = LOOP_OVER_FACTORIES.replace("cp.save_any_names_but_these", "cp.dots_saveable")
    assert lint(mixed, {"REM003"}) == []  # the plain one is right uncalled: not every value is wrong
