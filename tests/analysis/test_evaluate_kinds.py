"""The value layer's spellings from issue 25: one test per kind of value it follows (enum members,
``Literal`` fields, memoized helpers, loop and comprehension variables, tuple items, wrappers that
keep their argument's behaviour), each read directly and seen where users meet it, with the
spellings it must leave unknown beside them."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from remat_lint.analysis.semantic import SemanticModel
from remat_lint.analysis.values import Value, Values
from tests.helpers import codes, lint

PRELUDE = """
import dataclasses, enum, functools
from typing import Literal, Optional
import jax
from jax import checkpoint_policies as cp
"""


def _last(code: str) -> tuple[Value, ...] | None:
    """What the value of the module's last assignment can be."""
    model = SemanticModel(cst.parse_module(textwrap.dedent(PRELUDE + code)))
    last = model.module.body[-1].body[0].value  # type: ignore[attr-defined]
    return Values(model).possible(last)


def _strings(code: str) -> set[str | bool | int | float | None] | None:
    found = _last(code)
    return None if found is None else {v.literal for v in found}


def test_enum_member_values_by_attribute_and_by_name():
    enum_class = "class Mode(enum.Enum):\n    FULL = 'nothing_saveable'\n    DOTS = 'dots_saveable'\n"
    assert _strings(enum_class + "x = Mode.FULL.value") == {"nothing_saveable"}
    assert _strings(enum_class + "x = Mode['DOTS'].value") == {"dots_saveable"}
    assert _strings("class Mode(str, enum.Enum):\n    FULL = 'nothing_saveable'\nx = Mode.FULL.value") == {
        "nothing_saveable"
    }


@pytest.mark.parametrize(
    "code",
    [
        "class Mode(enum.Enum):\n    FULL = enum.auto()\nx = Mode.FULL.value",  # what auto() gives is not followed
        "class Mode(enum.Enum):\n    FULL = 'a'\n    def __new__(cls, v):\n        return object.__new__(cls)\nx = Mode.FULL.value",
        "class Mode:\n    FULL = 'a'\nx = Mode.FULL.value",  # not an enum: .value of a str raises
        "class Mode(enum.Enum):\n    FULL = 'a'\nx = Mode[name].value",
    ],
    ids=["auto", "custom-new", "not-an-enum", "unknown-member"],
)
def test_enum_members_it_cannot_read_are_unknown(code):
    assert _last(code) is None


def test_literal_annotated_fields_hold_one_of_their_values():
    cls = "@dataclasses.dataclass\nclass C:\n    p: {} = 'dots_saveable'\n"
    build = "def build(c: C):\n    return jax.checkpoint(f, policy=c.p)"
    for annotation in ("Literal['dots_saveable']", "Literal['dots_saveable', 'nothing_saveable']"):
        assert codes(PRELUDE + cls.format(annotation) + build, select={"REM001"}) == ["REM001"]
    for annotation in ("Optional[Literal['dots_saveable']]", "Literal['dots_saveable'] | None"):
        # None is a valid policy (the default): the field may hold it
        assert codes(PRELUDE + cls.format(annotation) + build, select={"REM001"}) == []
    assert codes(PRELUDE + cls.format("Literal['nothing_saveable']") + build, select={"REM001"}) == []  # inconsistent
    assert codes(PRELUDE + cls.format("object") + build, select={"REM001"}) == []


def test_memoized_helpers_return_what_their_body_does():
    body = "def pick(n):\n    if n:\n        return 'dots_saveable'\n    return 'nothing_saveable'\nx = pick(1)"
    for decorator in ("@functools.cache\n", "@functools.lru_cache\n", "@functools.lru_cache(maxsize=None)\n"):
        assert _strings(decorator + body) == {"dots_saveable", "nothing_saveable"}
    assert _last("from tools import memo\n@memo\n" + body) is None  # another decorator may change the result
    assert _last("@functools.wraps(g)\n" + body) is None


def test_a_memoized_helper_returning_a_factory_is_an_uncalled_factory():
    code = (
        "@functools.lru_cache\ndef pick(n):\n    return cp.save_only_these_names\ng = jax.checkpoint(f, policy=pick(1))"
    )
    assert codes(PRELUDE + code, select={"REM003"}) == ["REM003"]


def test_loop_variables_hold_each_element_of_the_iterated_literal():
    assert _strings("for p in ('dots_saveable', 'nothing_saveable'):\n    pass\nx = p") == {
        "dots_saveable",
        "nothing_saveable",
    }
    loop = "for p in {}:\n    g = jax.checkpoint(f, policy=p)"
    assert codes(PRELUDE + loop.format("['dots_saveable', 'nothing_saveable']"), select={"REM001"}) == ["REM001"]
    assert codes(PRELUDE + loop.format("('dots_saveable', cp.dots_saveable)"), select={"REM001"}) == []
    assert codes(PRELUDE + loop.format("policies"), select={"REM001"}) == []
    mutated = "P = ['dots_saveable']\nP.append(cp.dots_saveable)\n" + loop.format("P")
    assert codes(PRELUDE + mutated, select={"REM001"}) == []
    unpacked = "for p, q in [('dots_saveable', 1)]:\n    g = jax.checkpoint(f, policy=p)"
    assert codes(PRELUDE + unpacked, select={"REM001"}) == []


def test_comprehension_variables_hold_each_element_of_the_iterated_literal():
    code = "NAMES = ('dots_saveable', 'nothing_saveable')\ngs = [jax.checkpoint(f, policy=p) for p in NAMES]"
    findings = lint(PRELUDE + code, select={"REM001"})
    assert [(f.code, f.start.row) for f in findings] == [("REM001", PRELUDE.count("\n") + 2)]
    mixed = "gs = [jax.checkpoint(f, policy=p) for p in (cp.dots_saveable, 'x')]"
    assert codes(PRELUDE + mixed, select={"REM001"}) == []


def test_tuple_and_list_items_by_integer_index():
    assert _strings("T = ('dots_saveable', cp.dots_saveable)\nx = T[0]") == {"dots_saveable"}
    assert _strings("T = ['a', 'b']\nx = T[-1]") == {"b"}
    assert _last("T = ('a',)\nx = T[3]") is None  # IndexError
    assert _last("T = ['a']\nT.insert(0, cp.dots_saveable)\nx = T[0]") is None
    assert codes(PRELUDE + "T = ('dots_saveable',)\ng = jax.checkpoint(f, policy=T[0])", select={"REM001"}) == [
        "REM001"
    ]


def test_named_call_returns_its_arguments_behaviour():
    assert _strings("x = jax.named_call('dots_saveable', name='n')") == {"dots_saveable"}
    code = "def loss(x):\n    return (x ** 2).sum()\ndl = jax.grad(jax.named_call(jax.checkpoint(loss), name='l'))"
    assert codes(PRELUDE + code, select={"REM101"}) == ["REM101"]
    assert codes(PRELUDE + code.replace("jax.checkpoint(loss)", "loss"), select={"REM101"}) == []


def _values(code: str) -> tuple[Values, cst.BaseExpression]:
    """The value layer of a module and the value of its last assignment."""
    model = SemanticModel(cst.parse_module(textwrap.dedent(PRELUDE + code)))
    return Values(model), model.module.body[-1].body[0].value  # type: ignore[attr-defined]


def test_set_literals_hold_their_items_but_have_no_index():
    values, last = _values("S = {'q', 'k'}\nx = S")
    assert {v.literal for v in values.elements(last) or ()} == {"q", "k"}
    assert _last("S = {'q'}\nx = S[0]") is None  # TypeError: a set is not subscriptable
    assert _strings("x = [n for n in {'q'}][0]") == {"q"}  # any element of a comprehension
    assert _strings("for n in {'q', 'k'}:\n    x = n\ny = x") == {"q", "k"}


def test_elements_of_one_literal_a_name_certainly_holds():
    values, last = _values("NAMES = ('q', 'k')\nx = NAMES")
    assert [v.literal for v in values.elements(last) or ()] == ["q", "k"]
    for code in (
        "NAMES = ['q']\nNAMES.append('k')\nx = NAMES",  # mutated
        "NAMES = ('q',) if c else ('k',)\nx = NAMES",  # two literals
        "NAMES = ('q', g())\nx = NAMES",  # an unknown item
    ):
        values, last = _values(code)
        assert values.elements(last) is None, code


def test_entries_of_a_table_through_names_bound_once():
    values, last = _values("_T = {'full': None}\nT = _T\nx = T")
    [(key, _)] = values.entries(last) or []
    assert key is not None and key.literal == "full"
    values, last = _values("_T = {'full': None}\n_T['dots'] = cp.dots_saveable\nT = _T\nx = T")
    assert values.entries(last) is None  # written through a subscript


def test_a_custom_policy_held_in_a_table_or_returning_a_constant_name_is_read():
    """REM105 asks the value layer what the policy is and what each ``return`` gives."""
    table = "def never(*_, **__):\n    return False\nP = {'n': never}\ng = jax.checkpoint(f, policy=P['n'])"
    assert codes(PRELUDE + table, select={"REM105"}) == ["REM105"]
    constant = "SAVE = False\ndef never(*_, **__):\n    return SAVE\ng = jax.checkpoint(f, policy=never)"
    assert codes(PRELUDE + constant, select={"REM105"}) == ["REM105"]
    varies = "def p(prim, *_, **__):\n    return prim.name == 'dot'\ng = jax.checkpoint(f, policy=P.get('n', p))"
    assert codes(PRELUDE + varies, select={"REM105"}) == []


def test_an_einsum_spec_held_in_a_constant_is_a_linear_map():
    """REM106 asks the value layer whether einsum's first argument is a string."""
    code = "import jax.numpy as jnp\nSPEC = 'bi,io->bo'\ng = jax.checkpoint(lambda x, w: jnp.einsum(SPEC, x, w))"
    assert codes(PRELUDE + code, select={"REM106"}) == ["REM106"]
    assert codes(PRELUDE + code.replace("SPEC = 'bi,io->bo'", "SPEC = load()"), select={"REM106"}) == []
