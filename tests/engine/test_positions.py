"""Positions computed per statement (remat_lint/engine/positions.py) equal libcst's for the whole module."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from remat_lint.analysis.semantic import SemanticModel, child_nodes
from remat_lint.engine import positions as positions_module
from remat_lint.engine.positions import Positions

ROOT = Path(__file__).resolve().parents[2]
TRICKY = {
    "decorators": "# header\n\nimport jax\n\n# c1\n@jax.jit\n# c2\n\n@jax.checkpoint\ndef f(x):\n    return x\n",
    "semicolons": "import jax; f = jax.checkpoint(g); h = 1\nx = (\n  1,\n)\n",
    "crlf": "import jax\r\n\r\n@jax.checkpoint\r\ndef f(x):\r\n    return x\r\n",
    "no_trailing_newline": "import jax\nf = jax.checkpoint(g)",
    "backslash": "import jax\nf = \\\n  jax.checkpoint(g)\nclass A:\n    x = 1\n",
    "form_feed": "import jax\n\x0c\ndef f():\n    return jax.checkpoint(g)\n",
    "async": "import jax\nasync def f():\n    async with a as b:\n        return jax.checkpoint(g)\n",
    "nested": (
        "import typing as t\nclass A(t.Generic[T], metaclass=M):\n    x = P[k]; y = (\n        P[j])\n    @d\n    def f(self):\n"
        "        if c: return P['a']\n        for i in r:\n            while w:\n                with m:\n                    z = P[i]\n"
        "        else:\n            q = P[0]\n        s = '''\n        doc'''; u = P[1]\nclass B(\n    t.Generic[T]):\n    pass\n"
        "class C(t.Generic[T],\n        D): pass\n"
    ),
}
SOURCES = {**TRICKY, **{p.name: p.read_text(encoding="utf-8") for p in sorted((ROOT / "fixtures").rglob("*.py"))}}


def _against_libcst(name: str) -> tuple[cst.Module, Any, SemanticModel, Positions, list[cst.CSTNode]]:
    """A source's module, libcst's own positions of it, its model, ``Positions`` and every node."""
    source = SOURCES[name]
    module = cst.parse_module(source)
    whole = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    model = SemanticModel(module)
    positions = Positions(module, source, model.parents, ast.parse(source))
    nodes, stack = [], list(module.body)
    while stack:
        node = stack.pop()
        nodes.append(node)
        stack.extend(child_nodes(node))
    return module, whole, model, positions, nodes


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_positions_match_libcst(name):
    module, whole, model, positions, nodes = _against_libcst(name)
    known = [n for n in nodes if id(n) in model.parents]
    for node in known + [n for n in nodes if id(n) not in model.parents]:  # then those the parents map skips
        assert positions[node] == whole[node], (name, module.code_for_node(node)[:60])
    assert positions._whole is None, "fell back to the whole module"


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_start_line_matches_libcst(name):
    """``start_line`` reads ``ast`` where a statement holding the node is on one line: the same line."""
    module, whole, model, positions, nodes = _against_libcst(name)
    for node in nodes:
        if id(node) in model.parents:
            assert positions.start_line(node) == whole[node].start.line, (name, module.code_for_node(node)[:60])


def test_start_line_of_one_line_statements_computes_no_positions():
    source = SOURCES["nested"]
    module = cst.parse_module(source)
    model = SemanticModel(module)
    positions = Positions(module, source, model.parents, ast.parse(source))
    lookups: dict[str, cst.Subscript] = {}
    for subscript in model.subscripts:
        lookups.setdefault(module.code_for_node(subscript), subscript)  # the first of each: class A's base
    lines = [positions.start_line(lookups[code]) for code in ("t.Generic[T]", "P['a']", "P[i]")]
    assert lines == [2, 7, 11] and positions._statements == {}
    assert positions.start_line(lookups["P[0]"]) == 13 and positions._statements  # in an ``else``: positions
    assert positions.start_line(lookups["P[k]"]) == 3  # its line goes on to the next
    assert positions.start_line(lookups["P[1]"]) == 15  # after a string over two lines


@pytest.mark.parametrize("name", sorted(TRICKY))
def test_positions_match_libcst_when_only_the_last_statement_is_kept(name, monkeypatch):
    """Only the most recent statements' positions are kept (memory: a finding on each of 20,000
    statements); one computed again after it was dropped is the same."""
    monkeypatch.setattr(positions_module, "KEPT_STATEMENTS", 1)
    module, whole, model, positions, nodes = _against_libcst(name)
    for node in [*nodes, *reversed(nodes)]:
        assert positions[node] == whole[node], (name, module.code_for_node(node)[:60])
    assert len(positions._statements) <= 1
