"""Code that expects an error: a test's ``with pytest.raises(...)`` block, or the body of a ``try``
whose handler catches it (feature detection, compatibility shims for older JAX). A mistake there
is deliberate or handled, so rules that predict that error stay quiet.
"""

from __future__ import annotations

import libcst as cst

from remat_lint.analysis.semantic import SemanticModel

_RAISES_HELPERS = frozenset({"raises", "assertRaises", "assertRaisesRegex", "assertRaisesRegexp", "assert_raises"})
_BROAD = frozenset({"Exception", "BaseException"})


def expects_error(model: SemanticModel, node: cst.CSTNode, errors: frozenset[str] | None = None) -> bool:
    """True when ``node`` runs where an error is expected: inside ``with pytest.raises(...)`` (or
    ``self.assertRaises...``), or in a ``try`` body with a handler catching one of ``errors``
    (exception class names; None: any exception)."""
    child = node
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, cst.With) and child is ancestor.body:
            if any(_is_raises_helper(item.item) for item in ancestor.items):
                return True
        elif isinstance(ancestor, (cst.Try, cst.TryStar)) and child is ancestor.body:
            if any(_catches(handler.type, errors) for handler in ancestor.handlers):
                return True
        child = ancestor
    return False


def _is_raises_helper(expr: cst.BaseExpression) -> bool:
    if not isinstance(expr, cst.Call):
        return False
    func = expr.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
    return name in _RAISES_HELPERS


def _catches(kind: cst.BaseExpression | None, errors: frozenset[str] | None) -> bool:
    if kind is None or errors is None:
        return True  # a bare ``except:``, or any handler at all
    if isinstance(kind, cst.Tuple):
        return any(_catches(element.value, errors) for element in kind.elements)
    name = kind.attr.value if isinstance(kind, cst.Attribute) else kind.value if isinstance(kind, cst.Name) else None
    return name in errors or name in _BROAD
