"""The package's import graph has no circle and keeps the layering of DEVELOPMENT.md.

Every import Python may execute counts: module-level ones and those inside functions (an import
moved into a function to run later still makes its module depend on the other; moving it there
to dodge a circle only hides the circle). Imports under ``if TYPE_CHECKING:`` do not count: they
never run, they only name types for annotations. Importing ``a.b.c`` counts as an edge to
``a.b.c`` alone (the packages' ``__init__`` modules above it hold docstrings or tables that import
nothing back). The rules in the top-level ``rules/`` folder are the package ``remat_lint.rules``.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"remat_lint": ROOT / "remat_lint", "remat_lint.rules": ROOT / "rules"}


@cache
def module_files() -> dict[str, Path]:
    """Dotted module name -> its file."""
    found = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")


def _imported(node: ast.AST, modules: dict[str, Path]) -> Iterator[str]:
    """The project modules one import statement loads."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names if alias.name in modules)
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in modules:
        for alias in node.names:  # ``from pkg import mod`` loads the submodule, ``from mod import name`` mod
            submodule = f"{node.module}.{alias.name}"
            yield submodule if submodule in modules else node.module


def imports_of(path: Path) -> set[str]:
    """The project modules ``path`` imports at run time, wherever the import statement is."""
    modules = module_files()
    found: set[str] = set()
    pending: list[ast.AST] = [ast.parse(path.read_text(encoding="utf-8"))]
    while pending:
        node = pending.pop()
        if _is_type_checking(node):
            pending.extend(node.orelse)  # type: ignore[attr-defined]  # an If: its else branch runs
            continue
        found.update(_imported(node, modules))
        pending.extend(ast.iter_child_nodes(node))
    return found


@cache
def import_graph() -> dict[str, frozenset[str]]:
    return {name: frozenset(imports_of(path) - {name}) for name, path in module_files().items()}


def find_circle(graph: dict[str, frozenset[str]]) -> list[str]:
    """One import circle (``[a, b, a]``), or [] when the graph has none (depth-first search)."""
    done: set[str] = set()
    path: list[str] = []

    def visit(name: str) -> list[str]:
        if name in path:
            return [*path[path.index(name) :], name]
        if name in done:
            return []
        path.append(name)
        for target in sorted(graph[name]):
            circle = visit(target)
            if circle:
                return circle
        path.pop()
        done.add(name)
        return []

    for start in sorted(graph):
        circle = visit(start)
        if circle:
            return circle
    return []


def test_find_circle_finds_a_circle_and_only_one():
    assert find_circle({"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset()}) == []
    graph = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset({"a"})}
    assert find_circle(graph) == ["a", "b", "c", "a"]


def test_imports_in_functions_count_and_type_checking_ones_do_not(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "import remat_lint.findings\n"
        "if TYPE_CHECKING:\n    from remat_lint.engine.runner import RunResult\n"
        "else:\n    from remat_lint.cli import launch\n"
        "def f():\n    from remat_lint.engine import lint\n    from remat_lint.engine.results import FileResult\n"
    )
    assert imports_of(source) == {
        "remat_lint.findings",
        "remat_lint.cli.launch",
        "remat_lint.engine.lint",
        "remat_lint.engine.results",
    }


def test_no_import_circle():
    assert find_circle(import_graph()) == []


def _importers(importer: str, imported: str) -> list[str]:
    """``importer``'s modules that import one of ``imported``'s (prefixes of dotted names)."""

    def within(name: str, prefix: str) -> bool:
        return name == prefix or name.startswith(prefix + ".")

    return sorted(
        f"{name} -> {target}"
        for name, targets in import_graph().items()
        if within(name, importer)
        for target in targets
        if within(target, imported)
    )


@pytest.mark.parametrize(
    ("importer", "imported"),
    [
        ("remat_lint.analysis", "remat_lint.rules"),
        ("remat_lint.rules", "remat_lint.engine.runner"),
        ("remat_lint.rules", "remat_lint.cli"),
        ("remat_lint.rules", "remat_lint.server"),
        # the project model reads other files (engine/sources.py), below the engine's later stages
        ("remat_lint.project", "remat_lint.engine.runner"),
        ("remat_lint.project", "remat_lint.engine.lint"),
        ("remat_lint.project", "remat_lint.engine.results"),
        # --trace: the two sides meet only in the modules both read (protocol.py, inputs, shapes, units)
        ("remat_lint.trace.driver", "remat_lint.trace.worker"),
        ("remat_lint.trace.worker", "remat_lint.trace.driver"),
    ],
)
def test_a_lower_layer_never_imports_a_higher_one(importer, imported):
    assert _importers(importer, imported) == []


@pytest.mark.parametrize("module", ["remat_lint.apis", "remat_lint.findings"])
def test_apis_and_findings_import_nothing_of_the_project_but_themselves(module):
    outside = [line for line in _importers(module, "remat_lint") if not line.split(" -> ")[1].startswith(module)]
    assert outside == []


@pytest.mark.parametrize("side", ["remat_lint.trace.driver", "remat_lint.trace.worker"])
def test_what_both_trace_sides_share_imports_neither(side):
    shared = [name.removesuffix(".py") for name in os.listdir(ROOT / "remat_lint" / "trace") if name.endswith(".py")]
    assert [line for module in shared for line in _importers(f"remat_lint.trace.{module}", side)] == []


def test_at_most_ten_modules_at_the_root():
    assert len(list((ROOT / "remat_lint").glob("*.py"))) <= 10
