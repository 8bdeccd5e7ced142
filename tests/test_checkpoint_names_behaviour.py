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
g = jax.checkpoint(f, policy=jax.checkpoint_policies.save_only_these_names(SAVED))
"""


def _rem008(name: str, saved: str) -> list[str]:
    return [f.message for f in lint(_CODE.replace("NAME", name).replace("SAVED", saved)) if f.code in ("REM008", "REM000")]


@pytest.mark.parametrize(
    ("name", "saved"),
    [
        ('"{{a}}_{}".format(i)', '"{a}_0"'),  # escaped braces of a format template
        ('f"{{a}}_{i}"', '"{a}_0"'),  # and of an f-string
        ('"%s_%%" % i', '"0_%"'),
        ("tag", '"kw2"'),  # a keyword-only parameter: what the module's call passes
        ("tag", '"kw"'),  # and its default
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
