"""The project files a linted file imports, transitively: what a file linted alone (pre-commit's
staged files, flake8, an editor's buffer) needs read for its cross-module findings (the wrap that
``stack.py`` calls lives in ``layers.py``, which ``stack.py`` imports).

Read with ``ast`` from the text, cheaply and whether or not the file names a remat API: a caller
often does not (``L.rotary_attention(q, k, v, num_heads=4)``).
"""

from __future__ import annotations

import ast
import os
from typing import Callable, Iterable

from remat_lint.project.modules import LIBRARIES, absolute, is_package, module_names


class ProjectFiles:
    """The files of a project under ``root``, by the dotted names they are imported as."""

    def __init__(self, root: str, files: Iterable[str]) -> None:
        self.root = root
        self.by_name: dict[str, str] = {}
        self.reals: dict[str, str] = {}  # real path -> path
        for path in files:
            self.reals[os.path.realpath(path)] = path
            for name in module_names(os.path.relpath(path, root)):
                self.by_name.setdefault(name, path)

    def name_of(self, path: str) -> str | None:
        names = module_names(os.path.relpath(path, self.root))
        return names[0] if names else None

    def imported(self, path: str, text: str | bytes) -> set[str]:
        """The project's files that ``text`` (the file ``path``) imports: each module named and
        the packages above it (their ``__init__`` may re-export a name)."""
        module = self.name_of(path)
        found = set()
        for dotted in _imported_names(text, module, is_package(path)):
            if dotted.split(".", 1)[0] in LIBRARIES:
                continue
            neighbour = f"{module.rsplit('.', 1)[0]}.{dotted}" if module and "." in module else None
            for name in (dotted, neighbour):  # ``import layers`` in a script beside it, as Project.resolve reads it
                parts = name.split(".") if name else []
                found.update(
                    self.by_name[p] for i in range(len(parts)) if (p := ".".join(parts[: i + 1])) in self.by_name
                )
        return found

    def closure(self, linted: dict[str, str], read: Callable[[str], bytes | None]) -> list[tuple[str, bytes | None]]:
        """The files that ``linted`` (path -> text) import, transitively, within the project, with
        their bytes as ``read`` gives them (None when it cannot read one)."""
        seen = {os.path.realpath(path) for path in linted}
        frontier: list[tuple[str, str | bytes]] = list(linted.items())
        found: list[tuple[str, bytes | None]] = []
        while frontier:
            following = []
            for path, text in frontier:
                for imported in sorted(self.imported(path, text)):
                    real = os.path.realpath(imported)
                    if real in seen:
                        continue
                    seen.add(real)
                    other = read(imported)
                    found.append((imported, other))
                    if other is not None:
                        following.append((imported, other))
            frontier = following
        return found


def _imported_names(text: str | bytes, module: str | None, package: bool) -> set[str]:
    """Absolute dotted names of what ``text`` imports: ``import a.b`` -> a.b; ``from .c import d``
    (in ``pkg.m``) -> pkg.c and pkg.c.d (``d`` may be a module)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level and module is None:
                continue
            base = absolute((node.level, node.module or ""), module, package) if module and node.level else node.module
            if base is None:
                continue
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return names
