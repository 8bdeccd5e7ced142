"""Positions computed per statement (remat_lint/positions.py) equal libcst's for the whole module."""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from remat_lint.analysis.semantic import SemanticModel, child_nodes
from remat_lint.positions import Positions

ROOT = Path(__file__).resolve().parent.parent
TRICKY = {
    "decorators": "# header\n\nimport jax\n\n# c1\n@jax.jit\n# c2\n\n@jax.checkpoint\ndef f(x):\n    return x\n",
    "semicolons": "import jax; f = jax.checkpoint(g); h = 1\nx = (\n  1,\n)\n",
    "crlf": "import jax\r\n\r\n@jax.checkpoint\r\ndef f(x):\r\n    return x\r\n",
    "no_trailing_newline": "import jax\nf = jax.checkpoint(g)",
    "backslash": "import jax\nf = \\\n  jax.checkpoint(g)\nclass A:\n    x = 1\n",
    "form_feed": "import jax\n\x0c\ndef f():\n    return jax.checkpoint(g)\n",
    "async": "import jax\nasync def f():\n    async with a as b:\n        return jax.checkpoint(g)\n",
}
SOURCES = {**TRICKY, **{p.name: p.read_text(encoding="utf-8") for p in sorted((ROOT / "fixtures").rglob("*.py"))}}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_positions_match_libcst(name):
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
    known = [n for n in nodes if id(n) in model.parents]
    for node in known + [n for n in nodes if id(n) not in model.parents]:  # then those the parents map skips
        assert positions[node] == whole[node], (name, module.code_for_node(node)[:60])
    assert positions._whole is None, "fell back to the whole module"
