"""What ``analysis/policies.py`` reads from a policy, seen through the rules that report it
(REM105's constant returns, REM008's checkpoint names); written against surviving mutants."""

from __future__ import annotations

import pytest

from tests.helpers import lint

ALWAYS_NONE = "is a custom policy that always returns `None`, which is not a bool."


def _found(code: str) -> list[tuple[str, int, int, str]]:
    return [(f.code, f.start.row, f.start.column, f.message) for f in lint(code)]


def test_a_def_returning_a_literal_none_is_reported_as_always_none():
    code = "import jax\ndef policy(prim, *args, **params):\n    return None\ng = jax.checkpoint(f, policy=policy)\n"
    [(rule, row, column, message)] = _found(code)
    assert (rule, row, column) == ("REM105", 4, 4)
    assert message.startswith(f"`policy=policy` {ALWAYS_NONE}")


def test_a_lambda_returning_none_is_reported_as_always_none():
    [(rule, row, column, message)] = _found("import jax\ng = jax.checkpoint(f, policy=lambda *_, **__: None)\n")
    assert (rule, row, column) == ("REM105", 2, 4)
    assert message.startswith(f"`policy=lambda *_, **__: None` {ALWAYS_NONE}")


def test_names_after_a_double_star_argument_are_still_read():
    code = """\
import jax
from jax.ad_checkpoint import checkpoint_name
cp = jax.checkpoint_policies
def f(x):
    return checkpoint_name(x * 2, "typo")
opts = {}
policy = cp.save_and_offload_only_these_names(
    **opts, names_which_can_be_saved=["tyop"], names_which_can_be_offloaded=[], offload_src="device", offload_dst="pinned_host"
)
g = jax.checkpoint(f, policy=policy)
"""
    [(rule, row, column, message)] = _found(code)
    assert (rule, row, column) == ("REM008", 8, 38)
    assert message.startswith(
        "`save_and_offload_only_these_names` is given 'tyop', but no `checkpoint_name(x, 'tyop')`"
    )
    assert "did you mean 'typo'?" in message


def test_a_checkpoint_name_call_without_a_name_makes_the_names_unknown():
    code = """\
import jax
from jax.ad_checkpoint import checkpoint_name
def f(x):
    return checkpoint_name(x * 2)
g = jax.checkpoint(f, policy=jax.checkpoint_policies.save_only_these_names("tyop"))
"""
    assert _found(code) == []


def test_names_a_factory_does_not_take_are_left_to_rem003():
    """A keyword ``save_only_these_names`` has no, or a positional name given to the keyword-only
    ``save_and_offload_only_these_names``: JAX raises, REM003 says so, and REM008 reads no name."""
    code = """\
import jax
from jax.ad_checkpoint import checkpoint_name
def f(x):
    return checkpoint_name(x * 2, "typo")
g = jax.checkpoint(f, policy=jax.checkpoint_policies.save_only_these_names(names_which_can_be_saved=["tyop"]))
h = jax.checkpoint(f, policy=jax.checkpoint_policies.save_and_offload_only_these_names("tyop"))
"""
    assert [finding[:3] for finding in _found(code)] == [("REM003", 5, 29), ("REM003", 6, 29)]


def test_flax_linens_positional_policy_slot_is_read():
    """``nn.remat(target, variables, rngs, concrete, prevent_cse, static_argnums, policy)``."""
    code = (
        "from flax import linen as nn\nBlockR = nn.remat(Block, True, True, False, True, (), lambda *_, **__: False)\n"
    )
    [(rule, row, column, message)] = _found(code)
    assert (rule, row, column) == ("REM105", 2, 9)
    assert message.startswith(
        "`policy=lambda *_, **__: False` is a custom policy that always returns `False`, so it saves nothing."
    )


@pytest.mark.parametrize(
    "code",
    [
        "import jax\ng = jax.checkpoint(f, policy=lambda prim, *_, **__: prim.name == 'dot_general')\n",
        # a decorator may change what the function returns
        "import functools\nimport jax\n@functools.cache\ndef policy(prim, *args, **params):\n    return False\n"
        "g = jax.checkpoint(f, policy=policy)\n",
    ],
    ids=["lambda-deciding-per-primitive", "decorated-def"],
)
def test_policies_without_a_certain_constant_stay_quiet(code):
    assert _found(code) == []


@pytest.mark.parametrize(
    ("tagger", "found"),
    [("ops.checkpoint_name", []), ("checkpoint_name", []), ("ops.tag_name", [("REM008", 6, 75)])],
)
def test_an_unresolved_callee_spelled_checkpoint_name_declares_its_names(tagger, found):
    """A project's re-export or wrapper: its ``f"layer_{i}"`` declares the names ``layer_.*``."""
    code = f"""\
import jax
from jax.ad_checkpoint import checkpoint_name as jax_name
def f(ops, x, i):
    y = jax_name(x, "other")
    return {tagger}(y, f"layer_{{i}}")
g = jax.checkpoint(f, policy=jax.checkpoint_policies.save_only_these_names("layer_0"))
"""
    assert [finding[:3] for finding in _found(code)] == found


@pytest.mark.parametrize(("renames", "found"), [(7, [("REM105", 10, 4)]), (8, [])])
def test_a_policy_is_followed_through_seven_renames_and_no_more(renames, found):
    """The value layer's depth bound (``value.MAX_DEPTH``) follows at most seven names bound once
    (P7 = P6 ... P1 = P0 = lambda)."""
    lines = ["import jax", "P0 = lambda *a, **k: False", *(f"P{i} = P{i - 1}" for i in range(1, renames + 1))]
    code = "\n".join([*lines, f"g = jax.checkpoint(f, policy=P{renames})", ""])
    assert [finding[:3] for finding in _found(code)] == found


@pytest.mark.parametrize(
    ("line", "unknown"),
    [
        (
            "layer = Dense(4, tagger=checkpoint_name)",
            "`Dense(4, tagger=checkpoint_name)` in example.py",
        ),  # the call passing it on
        ("tag = checkpoint_name", "`checkpoint_name` in example.py"),  # no call: the reference itself
        # a partial with a positional argument besides the function declares nothing certain
        (
            "tag = functools.partial(checkpoint_name, x, name='other')",
            "`functools.partial(checkpoint_name, x, name='other')` in example.py",
        ),
    ],
)
def test_rem008_names_the_checkpoint_name_uses_it_cannot_know(line, unknown):
    code = f"""\
import functools
import jax
from jax.ad_checkpoint import checkpoint_name
def f(x):
    return checkpoint_name(x, "typo")
{line}
g = jax.checkpoint(f, policy=jax.checkpoint_policies.save_only_these_names("tyop"))
"""
    [(rule, row, column, message)] = _found(code)
    assert (rule, row, column) == ("REM008", 7, 75)
    assert "did you mean 'typo'?" in message
    assert message.endswith(f"; unless one of the names that cannot be known here gives it: {unknown}")


@pytest.mark.parametrize(
    ("binding", "found"),
    [
        ("NAME = 'tyop'", [("REM008", 6, 75)]),  # one name bound to a string: reported at the argument
        ("NAMES = {'tyop'}", [("REM008", 6, 76)]),  # a set literal spread
        ("NAME = 'tyop' if a else 'typo'", []),  # either: not certain
    ],
)
def test_rem008_reads_checkpoint_names_through_the_value_layer(binding, found):
    argument = "*NAMES" if "NAMES" in binding else "NAME"
    code = f"""\
import jax
from jax.ad_checkpoint import checkpoint_name
def f(x):
    return checkpoint_name(x, "typo")
{binding}
g = jax.checkpoint(f, policy=jax.checkpoint_policies.save_only_these_names({argument}))
"""
    assert [finding[:3] for finding in _found(code)] == found
