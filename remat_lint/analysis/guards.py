"""Code that expects an error: a test's ``with pytest.raises(...)`` block, or the body of a ``try``
whose handler catches it (feature detection, compatibility shims for older JAX). A mistake there
is deliberate or handled, so rules that predict that error stay quiet. The same holds for a
mistake in a function or class whose every use in the module is in a ``pytest.raises`` block,
or, in a ``test_*`` function, in a ``try`` body whose handler names the very error: a test that
defines a broken function (or Module) and calls it there (JAX's and Flax's own tests,
``except TracerBoolConversionError``).
A broad handler (``except Exception:``, a bare ``except:``) covers only the code written in its
``try`` body: ``try: Model().init(...) except Exception:`` in a script is a guard around a run,
not a statement that ``Model``'s mistakes are intended.
"""

from __future__ import annotations

import libcst as cst

from remat_lint.analysis.semantic import SemanticModel, child_nodes

_RAISES_HELPERS = frozenset({"raises", "assertRaises", "assertRaisesRegex", "assertRaisesRegexp", "assert_raises"})
_BROAD = frozenset({"Exception", "BaseException"})


def expects_error(
    model: SemanticModel, node: cst.CSTNode, errors: frozenset[str] | None = None, broad: bool = True
) -> bool:
    """True when ``node`` runs where an error is expected: inside ``with pytest.raises(...)`` (or
    ``self.assertRaises...``), or in a ``try`` body with a handler catching one of ``errors``
    (exception class names; None: any exception), by name or with ``except Exception`` or a bare
    ``except:``. Not ``broad``: only ``with pytest.raises``, and a handler naming the error in a
    ``test_*`` function."""
    child = node
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, cst.With) and child is ancestor.body:
            if any(_is_raises_helper(item.item) for item in ancestor.items):
                return True
        elif isinstance(ancestor, (cst.Try, cst.TryStar)) and child is ancestor.body:
            in_scope = broad or _in_test_function(model, ancestor)
            if in_scope and any(_catches(handler.type, errors, broad) for handler in ancestor.handlers):
                return True
        child = ancestor
    return False


def only_where_error_expected(
    model: SemanticModel, node: cst.CSTNode, errors: frozenset[str] | None = None, depth: int = 2
) -> bool:
    """True when ``node`` runs only where one of ``errors`` is expected: it is itself
    (``expects_error``), or it is in a function, or a method of a class, whose every reference in
    the module is a call (``f(x)``, ``jax.grad(f)(x)``) in a ``pytest.raises`` block or, in a test,
    a ``try`` whose handler names the error (up to ``depth`` levels of such functions). A function with no
    reference, or one passed around or rebound, may run anywhere."""
    return _expected(model, node, errors, depth, broad=True)


def _expected(model: SemanticModel, node: cst.CSTNode, errors: frozenset[str] | None, depth: int, broad: bool) -> bool:
    if expects_error(model, node, errors, broad):
        return True
    owner = _owner(model, node)
    if depth == 0 or owner is None:
        return False
    calls = _calls_of(model, owner)
    return (
        calls is not None
        and bool(calls)
        and all(_expected(model, call, errors, depth - 1, broad=False) for call in calls)
    )


def _owner(model: SemanticModel, node: cst.CSTNode) -> cst.FunctionDef | cst.ClassDef | None:
    """The named function around ``node``; for a method, its class (it runs through instances)."""
    info = model.enclosing_function(node)
    if info is None or not isinstance(info.node, cst.FunctionDef):
        return None
    return info.class_node or info.node


def _calls_of(model: SemanticModel, owner: cst.FunctionDef | cst.ClassDef) -> list[cst.Call] | None:
    """The calls of ``owner`` by name; None when its name is used any other way or means more."""
    name = owner.name.value
    calls = []
    stack: list[cst.CSTNode] = [model.module]
    while stack:
        node = stack.pop()
        stack.extend(child_nodes(node))
        if not isinstance(node, cst.Name) or node.value != name or node is owner.name:
            continue
        if _not_a_reference(model, node):
            continue
        if model.definition(node) is not owner:
            if any(b.node is owner for b in model.bindings_of(name, model.scope_of(node))):
                return None  # rebound: which definition a reference means is unknown
            continue  # another variable of the same name
        call = _applied(model, node)
        if call is None:
            return None  # passed, stored or returned: it may be called anywhere
        calls.append(call)
    return calls


def _not_a_reference(model: SemanticModel, name: cst.Name) -> bool:
    """``obj.name`` and ``call(name=...)`` spell the name without referring to the variable."""
    parent = model.parent(name)
    if isinstance(parent, cst.Attribute):
        return parent.attr is name
    return isinstance(parent, cst.Arg) and parent.keyword is name


def _applied(model: SemanticModel, name: cst.Name) -> cst.Call | None:
    """The call that runs ``name`` right where it is written: ``f(x)``, or ``jax.grad(f)(x)``."""
    parent = model.parent(name)
    if isinstance(parent, cst.Call) and parent.func is name:
        return parent
    transform = model.parent(parent) if isinstance(parent, cst.Arg) else None
    outer = model.parent(transform) if isinstance(transform, cst.Call) else None
    if isinstance(outer, cst.Call) and outer.func is transform:
        return outer
    return None


def _is_raises_helper(expr: cst.BaseExpression) -> bool:
    if not isinstance(expr, cst.Call):
        return False
    func = expr.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
    return name in _RAISES_HELPERS


def _in_test_function(model: SemanticModel, node: cst.CSTNode) -> bool:
    info = model.enclosing_function(node)
    return info is not None and isinstance(info.node, cst.FunctionDef) and info.node.name.value.startswith("test")


def _catches(kind: cst.BaseExpression | None, errors: frozenset[str] | None, broad: bool) -> bool:
    if kind is None:
        return broad  # a bare ``except:``
    if isinstance(kind, cst.Tuple):
        return any(_catches(element.value, errors, broad) for element in kind.elements)
    name = kind.attr.value if isinstance(kind, cst.Attribute) else kind.value if isinstance(kind, cst.Name) else None
    if name in _BROAD:
        return broad
    return errors is None or name in errors
