"""No rule decides by how an identifier is spelled: every rule's own examples (invalid and valid)
give the same findings, on the same lines, after their functions and variables are renamed.

Renamed: functions (not methods: an attribute spells them) and plainly assigned variables, with
every reference; a name that also occurs as an attribute, a keyword, a parameter or in a string is
kept (renaming it would change what the code does). ``test_*`` functions keep their names: pytest
collects by them.
"""

from __future__ import annotations

import libcst as cst
import pytest

from remat_lint.registry import all_rules
from tests.helpers import lint

NEUTRAL = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet")


class _Names(cst.CSTVisitor):
    """The names a module binds by ``def`` (not in a class) or ``name = ...``, and those it uses otherwise."""

    def __init__(self) -> None:
        self.bound: list[str] = []
        self.kept: set[str] = set()
        self._classes = 0

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes += 1

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes -= 1

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if not self._classes:
            self.bound.append(node.name.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        if isinstance(node.target, cst.Name):
            self.bound.append(node.target.value)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.kept.add(node.attr.value)

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.kept.add(node.keyword.value)

    def visit_Param(self, node: cst.Param) -> None:
        self.kept.add(node.name.value)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        self.kept.update(
            n.value for n in cst.ensure_type(node, cst.ImportAlias).name.children if isinstance(n, cst.Name)
        )
        if isinstance(node.name, cst.Name):
            self.kept.add(node.name.value)
        if node.asname is not None and isinstance(node.asname.name, cst.Name):
            self.kept.add(node.asname.name.value)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self.kept.update(str(node.evaluated_value).replace(",", " ").split())


class _Rename(cst.CSTTransformer):
    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        return updated.with_changes(value=self.names.get(updated.value, updated.value))


def renamed(code: str) -> str | None:
    """``code`` with its own functions and variables given neutral names; None if nothing can be."""
    module = cst.parse_module(code)
    names = _Names()
    module.visit(names)
    mine = [n for n in dict.fromkeys(names.bound) if n not in names.kept and not n.startswith(("test", "__"))]
    if not mine:
        return None
    mapping = {n: f"{NEUTRAL[i % len(NEUTRAL)]}{i}" for i, n in enumerate(mine)}
    return module.visit(_Rename(mapping)).code


def _examples() -> list[tuple[str, str]]:
    cases = []
    for rule in all_rules():
        for i, example in enumerate([*rule.VALID, *(x.code for x in rule.INVALID)]):
            cases.append((f"{rule.code}-{i}", example))
    return cases


def _found(code: str) -> list[tuple[str, int]]:
    return sorted((f.code, f.start.row) for f in lint(code))


@pytest.mark.parametrize(("case", "code"), _examples(), ids=[c for c, _ in _examples()])
def test_renaming_functions_and_variables_changes_no_finding(case: str, code: str) -> None:
    other = renamed(code)
    if other is None:
        pytest.skip("nothing of its own to rename")
    assert _found(other) == _found(code), other


LOSS_AND_GRADS = """\
import jax
import jax.numpy as jnp


def {name}(params, x):
    def {inner}(p):
        return jnp.mean(jnp.tanh(x @ p) ** 2)

    return jax.value_and_grad(jax.checkpoint({inner}))(params)
"""


@pytest.mark.parametrize("name", ["compute_grads", "loss_and_grads", "energy_forces", "inner_step", "meta_update"])
@pytest.mark.parametrize("inner", ["loss_fn", "potential", "f"])
def test_rem101_fires_whatever_the_functions_are_called(name: str, inner: str) -> None:
    assert _found(LOSS_AND_GRADS.format(name=name, inner=inner)) == [("REM101", 9)]


LAST_STAGE = """\
import jax
import jax.numpy as jnp

head = jax.checkpoint(lambda p, h: h @ p["head"])


def {name}(p, x, y):
    def {inner}(q):
        h = jnp.tanh(x @ q["body"])
        return jnp.mean((head(q, h) - y) ** 2)

    return jax.value_and_grad({inner})(p)
"""


@pytest.mark.parametrize("name", ["compute_grads", "loss_and_grads", "energy_forces", "inner_step", "meta_update"])
@pytest.mark.parametrize("inner", ["loss_fn", "potential", "f"])
def test_rem102_fires_whatever_the_functions_are_called(name: str, inner: str) -> None:
    """Issue 29: REM102, like REM101, went silent inside a function called ``loss_and_grads``."""
    assert _found(LAST_STAGE.format(name=name, inner=inner)) == [("REM102", 10)]


FLAG = """\
import jax


@jax.checkpoint
def block(x, {flag}):
    if {flag}:
        x = x * 2
    return x
"""
CONTAINER = """\
import jax


@jax.checkpoint
def block(x, {flag}):
    if {flag}:
        x = x + {flag}["bias"]
    return x
"""


@pytest.mark.parametrize("flag", ["training", "deterministic", "use_bias", "q", "cache", "opts"])
def test_rem202_judges_a_parameter_by_its_uses_not_its_name(flag: str) -> None:
    assert _found(FLAG.format(flag=flag)) == [("REM202", 6)]
    assert _found(CONTAINER.format(flag=flag)) == []  # indexed: it may be a dict, whose truth value is fine


OFF_BY_ONE = """\
import flax.linen as nn


class Block(nn.Module):
    @nn.compact
    def __call__(self, x, {flag}):
        x = nn.Dense(4)(x)
        return x if {flag} else -x


R = nn.remat(Block, static_argnums=(1,))
"""


@pytest.mark.parametrize("flag", ["deterministic", "train", "q"])
def test_rem011_off_by_one_whatever_the_flag_is_called(flag: str) -> None:
    assert ("REM011", 11) in _found(OFF_BY_ONE.format(flag=flag))
