"""Which modules that a linted file imports may export a wrap whose calls the file makes, told
without libcst: a rule that reports at calls (REM012, REM016) declares the words a module's
top-level code names wherever it binds such a wrap to a module-level name (``Rule.export_words``).

A file linted alone reads what it imports, transitively (``imports.py``): on MaxText, 180 files
for a trainer, 34 of which name a remat API (36k lines a libcst parse would cost), none holding
such a wrap. The raw text is looked at first; only a module whose text has every word of a rule
is parsed with ``ast`` (C, no libcst) for the words of its top-level code: ``static_argnums``
inside a method (a ``jax.jit`` or a ``nn.remat`` in ``__call__``) exports nothing.
"""

from __future__ import annotations

import ast
from typing import Iterable


def may_export(source: str, needs: Iterable[tuple[str, ...]]) -> bool:
    """Whether ``source`` names at top level every word of one of ``needs`` (each rule's
    ``export_words``; an empty one: always)."""
    needs = [words for words in needs if all(word in source for word in words)]
    if not needs:
        return False
    if any(not words for words in needs):
        return True
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True  # the engine reports it
    named = top_level_words(tree)
    return any(named.issuperset(words) for words in needs)


def top_level_words(tree: ast.Module) -> set[str]:
    """The names, attributes, keywords, imported names and identifier-like strings of the code
    that runs at module level: def and class bodies left out, their decorators (and a class's
    bases) kept, lambda bodies left out."""
    words: set[str] = set()
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            stack.extend(node.decorator_list)
            continue
        if isinstance(node, ast.ClassDef):
            stack.extend([*node.decorator_list, *node.bases, *node.keywords])
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name):
            words.add(node.id)
        elif isinstance(node, ast.Attribute):
            words.add(node.attr)
        elif isinstance(node, ast.keyword) and node.arg is not None:
            words.add(node.arg)
        elif isinstance(node, ast.alias):
            words.update(node.name.split("."))
            if node.asname:
                words.add(node.asname)
        elif isinstance(node, ast.ImportFrom) and node.module:
            words.update(node.module.split("."))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            words.add(node.value)
        stack.extend(ast.iter_child_nodes(node))
    return words
