"""Which parameter a negative or out-of-range ``static_argnums`` index selects under ``jax.checkpoint``
(analysis/static_args.py), seen through REM011's report of a string passed to a traced parameter:
reported only when the selection is certain, quiet when it depends on what each call passes
(``*args``, a default)."""

from __future__ import annotations

import pytest

from tests.helpers import lint

CALLED_WITH_A_STRING = """
import jax

def f({params}):
    return x

g = jax.checkpoint(f, static_argnums={index})
y = g(1.0, "train")
"""
TRACED_N = ("`\"train\"` is passed to `n`, which `jax.checkpoint` traces (not in `static_argnums`). The call raises "
            "`TypeError: Argument ... of type <class 'str'> is not a valid JAX type`; make `n` static (`static_argnums`), "
            "counting as `jax.checkpoint` does")


def rem011(params: str, index: str) -> list[tuple[int, str]]:
    return [(f.start.row, f.message) for f in lint(CALLED_WITH_A_STRING.format(params=params, index=index), {"REM011"})]


@pytest.mark.parametrize(("params", "index"), [("x, n", "-2"), ("x, n", "0"), ("x, n=1", "0")])
def test_a_certain_selection_leaves_n_traced(params, index):
    assert rem011(params, index) == [(8, TRACED_N)]


@pytest.mark.parametrize(("params", "index"), [("x, n", "-1"), ("x, n", "1")])
def test_n_selected(params, index):
    assert rem011(params, index) == []


@pytest.mark.parametrize(
    ("params", "index"),
    [
        ("x, n, *rest", "5"),  # past the parameters, but *rest may take it
        ("x, n, *rest", "-1"),  # the last argument passed: n, or one of *rest
        ("x, n=1", "-1"),  # n, or x when the call leaves n at its default
    ],
)
def test_a_selection_that_depends_on_the_call_is_left_alone(params, index):
    assert rem011(params, index) == []


def test_a_negative_index_past_the_first_parameter_is_out_of_range():
    [(row, message)] = rem011("x, n", "-3")
    assert row == 7
    assert message.split(". ", 1)[1].startswith("Index -3 is out of range: `f` takes 2 positional arguments, so every "
                                                "call raises `ValueError: ")


FLAX_BLOCK = """
import flax.linen as nn
from flax.linen import partitioning as nn_partitioning

class Block(nn.Module):
    @nn.compact
    def __call__(self, {params}):
        if train:
            x = x * 2
        return nn.Dense(4)(x)

RematBlock = {api}(Block, static_argnums={index})
"""


@pytest.mark.parametrize(
    ("api", "params", "index", "expected"),
    [
        # nn_partitioning.remat ignores negative indices and counts from the first argument after self
        ("nn_partitioning.remat", "x, train", "(-1,)", [("REM202", 8), ("REM011", 12)]),
        ("nn_partitioning.remat", "train, x", "(0,)", []),
        # nn.remat: -1 is Flax's variable groups, and -2 the last argument
        ("nn.remat", "train, x", "(-1,)", [("REM202", 8), ("REM011", 12)]),
        ("nn.remat", "x, train", "(-2,)", [("REM011", 12)]),
        ("nn.remat", "x, train", "(2,)", []),
    ],
)
def test_what_flax_makes_static_decides_whether_a_python_if_on_train_fails(api, params, index, expected):
    """REM202 reports ``if train:`` exactly when ``train`` stays traced under the API's own counting."""
    findings = lint(FLAX_BLOCK.format(api=api, params=params, index=index), {"REM011", "REM202"})
    assert [(f.code, f.start.row) for f in findings] == expected


@pytest.mark.parametrize(("index", "out_of_range"), [("-4", False), ("-5", False), ("-6", True)])
def test_a_negative_nn_remat_index_past_the_arguments_is_out_of_range_only_past_flaxs_groups(index, out_of_range):
    """Past ``x`` and ``train``, a shifted negative index lands on Flax's two groups (no ``ValueError``),
    and only further out is out of range."""
    [finding] = lint(FLAX_BLOCK.format(api="nn.remat", params="x, train", index=f"({index},)"), {"REM011"})
    shifted = (f"`static_argnums=({index},)` fails or selects the wrong argument in `nn.remat`. Flax shifts negative "
               f"indices by one, so {index} selects what {int(index) + 1} would in `jax.checkpoint`; use the positive index")
    beyond = (f"; index {index} is out of range: `__call__` takes 3 positional arguments counting `self`, so every call "
              "raises `ValueError: Positional argument indices, e.g. for static_argnums, must have value greater than or "
              "equal to -len(args) ...`")
    assert finding.message == shifted + (beyond if out_of_range else "")
