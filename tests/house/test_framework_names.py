"""Framework knowledge lives in remat_lint/apis/: no other module spells a JAX, Flax, Haiku, Equinox
or Optax qualified name (``"jax.lax.scan"``) or dotted prefix (``"jax.numpy."``) as a string; it
imports the named table or constant instead, so adding an API is one row there.

Docstrings are documentation, and messages are sentences (``"jax.checkpoint / jax.remat must
be..."`` quotes JAX's error): a string spells a name when it starts with one that a space does not
follow (``"jax.lax.scan"``, ``"jax.numpy."``, ``"jax.checkpoint_policies.save_only_these_names("``)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_NAME = re.compile(r"(?:jax|flax|haiku|equinox|optax)(?:\.\w+)*\.\w*(?:$|[^\w\s])")


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def spelled_names(source: str) -> list[tuple[int, str]]:
    """(line, text) of each string, or literal part of an f-string, that is a framework name."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and _NAME.match(node.value)
    ]


def _modules() -> list[Path]:
    paths = [*(ROOT / "remat_lint").rglob("*.py"), *(ROOT / "rules").glob("*.py")]
    return sorted(p for p in paths if "apis" not in p.relative_to(ROOT).parts)


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_outside_apis_spells_a_framework_name(path):
    found = spelled_names(path.read_text(encoding="utf-8"))
    assert not found, f"import these from remat_lint/apis/: {found}"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('SCANS = {"jax.lax.scan"}\n', [(1, "jax.lax.scan")]),
        ('x = "flax.linen."\n', [(1, "flax.linen.")]),
        ('def f(n):\n    return f"haiku.{n}"\n', [(2, "haiku.")]),
        (
            'def f(a):\n    return f"jax.checkpoint_policies.save_only_these_names({a})"\n',
            [(2, "jax.checkpoint_policies.save_only_these_names(")],
        ),
        ('"""Resolves jax.checkpoint."""\nx = "jax.checkpoint / jax.remat must be an int"\n', []),
        ('def f():\n    "equinox.filter_vjp"\n', []),  # a docstring
        ('x = "import jax"\ny = "jax"\nz = "jaxlib.xla"\n', []),
        ('x = "jax.checkpoint saves nothing here"\n', []),  # a sentence
    ],
)
def test_what_counts_as_a_spelled_name(source, expected):
    assert spelled_names(source) == expected
