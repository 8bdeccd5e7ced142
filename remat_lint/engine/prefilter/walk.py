"""One walk over an ``ast`` tree, shared by the prefilter's ``ast`` stages (stages.py, layer_scans.py)."""

from __future__ import annotations

import ast
from collections.abc import Iterator


def walk(tree: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``ast.walk``, in another order, at half its cost (its generators per node
    were a third of stage 3)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for name in node._fields:
            value = getattr(node, name)
            if isinstance(value, list):
                stack.extend(item for item in value if isinstance(item, ast.AST))
            elif isinstance(value, ast.AST):
                stack.append(value)
