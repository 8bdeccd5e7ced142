"""JAX configuration flags a module refers to that change what ``jax.checkpoint`` does.

``jax_remat3`` turns on an experimental implementation that honours ``static_argnames`` (ignored
otherwise, jax 0.10.2). A module that sets or reads the flag (``jax.config.update("jax_remat3",
True)``, ``jtu.with_config(jax_remat3=True)`` on a test class, ``with config.remat3(True):``,
``os.environ["JAX_REMAT3"]``) may run its checkpoints under either implementation, so what
depends on the flag cannot be told statically (JAX's own ``Remat3Test``).
"""

from __future__ import annotations

import libcst as cst

from remat_lint.analysis.semantic import child_nodes

_REMAT3 = frozenset({"jax_remat3", "JAX_REMAT3", "remat3"})


def refers_to_remat3(module: cst.Module) -> bool:
    """The module names the ``jax_remat3`` flag: a string, a keyword or an attribute (not a comment)."""
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.SimpleString) and node.evaluated_value in _REMAT3:
            return True
        if isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value in _REMAT3:
            return True
        if isinstance(node, cst.Attribute) and node.attr.value in _REMAT3:
            return True
        stack.extend(child_nodes(node))
    return False
