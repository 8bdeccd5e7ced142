"""REM011 on ``static_argnums`` read through a module constant (``IDX = 5``; analysis/static_args.py's
``_held``): the same findings as the literal, and none where the constant holds something unknown."""

from __future__ import annotations

import pytest

from tests.helpers import lint

JAX_SITE = """
import jax
from conf import K

IDX = {value}

def f(x, n):
    return x * n

g = jax.checkpoint(f, static_argnums=IDX)
"""
OUT_OF_RANGE = ("`static_argnums=IDX` fails or selects the wrong argument in `jax.checkpoint`. Index 5 is out of "
                "range: `f` takes 2 positional arguments, so every call raises `ValueError: the static_argnums argument ... "
                "can only take integer values ... less than len(args)`")


def rem011(code: str) -> list[tuple[int, int, str]]:
    return [(f.start.row, f.start.column, f.message) for f in lint(code, {"REM011"})]


@pytest.mark.parametrize("value", ["5", "(5,)", "(1, 5)"])
def test_an_index_out_of_range_held_by_a_constant(value):
    assert rem011(JAX_SITE.format(value=value)) == [(10, 4, OUT_OF_RANGE)]


def test_a_list_held_by_a_constant_fails_at_every_call():
    [(row, column, message)] = rem011(JAX_SITE.format(value="[1]"))
    assert (row, column) == (10, 4)
    assert message.startswith("`static_argnums=IDX` fails or selects the wrong argument in `jax.checkpoint`. A list is "
                              "accepted when wrapping, but every call raises `TypeError: the static_argnums argument")


@pytest.mark.parametrize("value", ["(5, K)", "K", "[i for i in range(5, 6)]"])
def test_a_constant_holding_an_unknown_index_is_left_alone(value):
    assert rem011(JAX_SITE.format(value=value)) == []


def test_an_int_held_by_a_constant_breaks_nn_partitioning_remat():
    code = """
import flax.linen as nn
from flax.linen import partitioning as nn_partitioning

IDX = 1

class Block(nn.Module):
    @nn.compact
    def __call__(self, x, train):
        return x

RematBlock = nn_partitioning.remat(Block, static_argnums=IDX)
"""
    [(row, column, message)] = rem011(code)
    assert (row, column) == (12, 13)
    assert message.startswith("`static_argnums=IDX` fails or selects the wrong argument in `nn_partitioning.remat`. "
                              "`nn_partitioning.remat` calls `sorted(static_argnums)`, so an int makes `init` raise "
                              "`TypeError: 'int' object is not iterable`")
    assert rem011(code.replace("IDX = 1", "IDX = (1,)")) == []


CALLED_WITH_A_STRING = JAX_SITE + 'y = g(1.0, "train")\n'


@pytest.mark.parametrize(("value", "reported"), [("(0,)", True), ("0", True), ("(1,)", False), ("(0, K)", False)])
def test_a_string_passed_to_a_parameter_the_constant_leaves_traced(value, reported):
    """Reported when the constant certainly leaves ``n`` traced; not when one of its indices is unknown."""
    assert [row for row, _, _ in rem011(CALLED_WITH_A_STRING.format(value=value))] == ([11] if reported else [])


def test_a_list_that_fails_every_call_is_reported_once():
    """The list makes every call raise before anything is traced: no second finding about the string."""
    assert [row for row, _, _ in rem011(CALLED_WITH_A_STRING.format(value="[0]"))] == [10]
