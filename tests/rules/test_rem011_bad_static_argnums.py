"""Which parameter a negative or out-of-range ``static_argnums`` index selects under ``jax.checkpoint``
(analysis/static_args.py), seen through REM011's report of a string passed to a traced parameter:
reported only when the selection is certain, quiet when it depends on what each call passes
(``*args``, a default)."""

from __future__ import annotations

import textwrap

import pytest

from remat_lint.config.resolver import Resolver
from remat_lint.config.settings import RuleSelection, Settings
from remat_lint.engine.runner import run
from tests.helpers import lint

CALLED_WITH_A_STRING = """
import jax

def f({params}):
    return x

g = jax.checkpoint(f, static_argnums={index})
y = g(1.0, "train")
"""
TRACED_N = (
    '`"train"` is passed to `n`, which `jax.checkpoint` traces (not in `static_argnums`). The call raises '
    "`TypeError: Argument ... of type <class 'str'> is not a valid JAX type`; make `n` static (`static_argnums`), "
    "counting as `jax.checkpoint` does"
)


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
    assert message.split(". ", 1)[1].startswith(
        "Index -3 is out of range: `f` takes 2 positional arguments, so every call raises `ValueError: "
    )


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
    shifted = (
        f"`static_argnums=({index},)` fails or selects the wrong argument in `nn.remat`. Flax shifts negative "
        f"indices by one, so {index} selects what {int(index) + 1} would in `jax.checkpoint`; use the positive index"
    )
    beyond = (
        f"; index {index} is out of range: `__call__` takes 3 positional arguments counting `self`, so every call "
        "raises `ValueError: Positional argument indices, e.g. for static_argnums, must have value greater than or "
        "equal to -len(args) ...`"
    )
    assert finding.message == shifted + (beyond if out_of_range else "")


# REM011 on ``static_argnums`` read through a module constant (``IDX = 5``; analysis/static_args.py's
# ``_held``): the same findings as the literal, and none where the constant holds something unknown.

JAX_SITE = """
import jax
from conf import K

IDX = {value}

def f(x, n):
    return x * n

g = jax.checkpoint(f, static_argnums=IDX)
"""
OUT_OF_RANGE = (
    "`static_argnums=IDX` fails or selects the wrong argument in `jax.checkpoint`. Index 5 is out of "
    "range: `f` takes 2 positional arguments, so every call raises `ValueError: the static_argnums argument ... "
    "can only take integer values ... less than len(args)`"
)


def rem011_at(code: str) -> list[tuple[int, int, str]]:
    return [(f.start.row, f.start.column, f.message) for f in lint(code, {"REM011"})]


@pytest.mark.parametrize("value", ["5", "(5,)", "(1, 5)"])
def test_an_index_out_of_range_held_by_a_constant(value):
    assert rem011_at(JAX_SITE.format(value=value)) == [(10, 4, OUT_OF_RANGE)]


def test_a_list_held_by_a_constant_fails_at_every_call():
    [(row, column, message)] = rem011_at(JAX_SITE.format(value="[1]"))
    assert (row, column) == (10, 4)
    assert message.startswith(
        "`static_argnums=IDX` fails or selects the wrong argument in `jax.checkpoint`. A list is "
        "accepted when wrapping, but every call raises `TypeError: the static_argnums argument"
    )


@pytest.mark.parametrize("value", ["(5, K)", "K", "[i for i in range(5, 6)]"])
def test_a_constant_holding_an_unknown_index_is_left_alone(value):
    assert rem011_at(JAX_SITE.format(value=value)) == []


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
    [(row, column, message)] = rem011_at(code)
    assert (row, column) == (12, 13)
    assert message.startswith(
        "`static_argnums=IDX` fails or selects the wrong argument in `nn_partitioning.remat`. "
        "`nn_partitioning.remat` calls `sorted(static_argnums)`, so an int makes `init` raise "
        "`TypeError: 'int' object is not iterable`"
    )
    assert rem011_at(code.replace("IDX = 1", "IDX = (1,)")) == []


CONSTANT_CALLED_WITH_A_STRING = JAX_SITE + 'y = g(1.0, "train")\n'


@pytest.mark.parametrize(("value", "reported"), [("(0,)", True), ("0", True), ("(1,)", False), ("(0, K)", False)])
def test_a_string_passed_to_a_parameter_the_constant_leaves_traced(value, reported):
    """Reported when the constant certainly leaves ``n`` traced; not when one of its indices is unknown."""
    assert [row for row, _, _ in rem011_at(CONSTANT_CALLED_WITH_A_STRING.format(value=value))] == (
        [11] if reported else []
    )


def test_a_list_that_fails_every_call_is_reported_once():
    """The list makes every call raise before anything is traced: no second finding about the string."""
    assert [row for row, _, _ in rem011_at(CONSTANT_CALLED_WITH_A_STRING.format(value="[0]"))] == [10]


# REM011 (bad static_argnums): cases found by mutation testing that no other test pinned.

BLOCK = """
import flax.linen as nn
class Block(nn.Module):
    @nn.compact
    def __call__(self, x, deterministic: bool, y):
        return x if deterministic else y
R = nn.remat(Block, static_argnums={indices})
"""


def test_the_flax_off_by_one_is_found_after_an_index_with_no_neighbour() -> None:
    """Index 3 selects the last argument (nothing after it to be meant instead); index 1 after it
    still selects `x` where `deterministic` was meant."""
    [finding] = lint(BLOCK.format(indices="(3, 1)"), {"REM011"})
    assert "`nn.remat` counts `self` as argument 0, so index 1 selects `x`, not `deterministic`" in finding.message


LAYERS = """
import flax.linen as nn
class Block(nn.Module):
    @nn.compact
    def __call__(self, x, deterministic: bool):
        return x if deterministic else -x
"""
MODEL = """
import flax.linen as nn
from .layers import Block
R = nn.remat(Block, static_argnums=(3,))
"""


def test_an_index_past_an_imported_class_names_the_valueerror_and_the_class_file(tmp_path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    for name, text in {"__init__.py": "", "layers.py": LAYERS, "model.py": MODEL}.items():
        (package / name).write_text(textwrap.dedent(text))
    result = run(
        [str(package / "layers.py"), str(package / "model.py")],
        Resolver.of(Settings(selection=[RuleSelection(select=("REM011",))])),
    )
    [finding] = result.findings
    assert finding.message == (
        "`static_argnums=(3,)` fails or selects the wrong argument in `nn.remat`. Index 3 is out of range: "
        "`Block.__call__` takes 3 positional arguments counting `self`, so every call raises `ValueError: the "
        "static_argnums argument ... can only take integer values ... less than len(args)` (`Block` is defined in "
        "layers.py)"
    )


@pytest.mark.parametrize(
    ("mode", "rows"),
    [
        ('MODE = "train"', [9]),  # a name that certainly holds a string: reported at the argument
        ('MODE = "train" if a else 1', []),  # may be a number
    ],
)
def test_a_string_held_in_a_constant_is_read_by_the_value_layer(mode: str, rows: list[int]) -> None:
    code = CALLED_WITH_A_STRING.format(params="x, n", index="()").replace('"train")', "MODE)")
    code = code.replace("import jax\n", f"import jax\n{mode}\n")
    assert [f.start.row for f in lint(code, {"REM011"})] == rows
