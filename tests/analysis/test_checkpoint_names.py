"""Which names ``analysis/checkpoint_names.py`` reads from a ``checkpoint_name`` call, seen through
REM008 (a policy naming what no ``checkpoint_name`` declares); written against surviving mutants
(docs/mutation-testing.md)."""

from __future__ import annotations

import pytest

from tests.helpers import lint

_CODE = """\
import jax
from jax.ad_checkpoint import checkpoint_name
def f(x, i, *, tag="kw"):
    return checkpoint_name(x * 2, NAME)
y = f(1.0, 0, tag="kw2")
z = f(2.0, 1)
g = jax.checkpoint(f, policy=jax.checkpoint_policies.save_only_these_names(SAVED))
"""


def _rem008(name: str, saved: str) -> list[str]:
    return [
        f.message for f in lint(_CODE.replace("NAME", name).replace("SAVED", saved)) if f.code in ("REM008", "REM000")
    ]


@pytest.mark.parametrize(
    ("name", "saved"),
    [
        ('"{{a}}_{}".format(i)', '"{a}_0"'),  # escaped braces of a format template
        ('f"{{a}}_{i}"', '"{a}_0"'),  # and of an f-string
        ('"%s_%%" % i', '"0_%"'),
        ("tag", '"kw2"'),  # a keyword-only parameter: what the module's call passes
        ("tag", '"kw"'),  # and its default (the second call)
        ('f"layer_{i:02d}"', '"layer_00"'),  # a formatted hole matches anything
    ],
)
def test_a_name_the_checkpoint_name_can_take_is_not_reported(name: str, saved: str):
    assert _rem008(name, saved) == []


@pytest.mark.parametrize(
    ("name", "saved"),
    [('"{{a}}_{}".format(i)', '"a_0"'), ('f"{{a}}_{i}"', '"{a_0}"'), ("tag", '"other"')],
)
def test_a_name_the_checkpoint_name_cannot_take_is_reported(name: str, saved: str):
    [message] = _rem008(name, saved)
    given = saved.strip('"')
    assert message.startswith(f"`save_only_these_names` is given '{given}', but no `checkpoint_name(x, '{given}')`")


_BLOCK = """\
import jax
from jax.ad_checkpoint import checkpoint_name

class Block:
    name = "blk"
    kind: str = "dense"

    def __init__(self, i):
        self.tag = f"t{i}"

    def __call__(self, x):
        x = checkpoint_name(x, self.name)
        x = checkpoint_name(x, self.kind)
        return checkpoint_name(x, self.tag)

g = jax.checkpoint(Block(0), policy=jax.checkpoint_policies.save_only_these_names(SAVED))
"""


@pytest.mark.parametrize("saved", ['"blk"', '"dense"', '"t3"'])
def test_names_held_in_self_attributes_are_read_from_the_class_and_its_methods(saved: str):
    assert [f.code for f in lint(_BLOCK.replace("SAVED", saved))] == []


def test_a_name_no_self_attribute_can_hold_is_reported():
    [finding] = lint(_BLOCK.replace("SAVED", '"zz"'))
    assert (finding.code, finding.start.row) == ("REM008", 16)
    assert finding.message.startswith("`save_only_these_names` is given 'zz', but no `checkpoint_name(x, 'zz')`")


def test_a_pattern_in_a_class_attribute_is_read_and_other_attributes_are_not():
    code = """\
import jax
from jax.ad_checkpoint import checkpoint_name

class Block:
    name = f"blk_{LAYER}"
    other: str = make_other()

    def __call__(self, x):
        return checkpoint_name(x, self.name)

g = jax.checkpoint(Block(), policy=jax.checkpoint_policies.save_only_these_names(SAVED))
"""
    assert lint(code.replace("SAVED", '"blk_3"')) == []
    [finding] = lint(code.replace("SAVED", '"zz"'))
    assert (finding.code, finding.start.row) == ("REM008", 11)
