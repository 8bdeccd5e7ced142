"""What certainly is a Flax linen Module class, instance or bound method (REM004, REM009, REM014,
REM015), as the value layer tells (``values.Values``, ``module_classes.module_family``).

- a class: every value the expression can hold is a Module class of Flax linen: a linen layer,
  a class deriving from one (through classes of this module), a Flax remat of one,
  ``functools.partial(Block, ...)``, what a same-module function returns, ``type(block)``, a
  name bound to any of them;
- an instance: every value is an instance of such a class (a constructor call, a name bound to
  one, ``self.x`` that the Module's methods assign only instances to, an element of a list of
  them, what a factory returns);
- a bound method: ``self.f`` where ``f`` is a plain method defined in the Module's class body.

Anything else is unknown and never reported: a class held in a dataclass field
(``self.block_cls``), a class imported from another module of the project (only the project
phase can tell: REM004 and REM009 report a candidate there), a class with a base that cannot be
resolved.
"""

from __future__ import annotations

import libcst as cst

from remat_lint.analysis.bodies import decorator_callee, is_instance_method, method, receiver_class
from remat_lint.analysis.module_classes import module_family
from remat_lint.analysis.semantic import Binding, SemanticModel
from remat_lint.analysis.value import Kind, Value
from remat_lint.analysis.values import Values
from remat_lint.apis import LINEN_MODULE_CLASSES
from remat_lint.apis.linen import PLAIN_METHOD_DECORATORS

_MAX_DEPTH = 16


def is_linen_class(values: Values, expr: cst.CSTNode) -> bool:
    """``expr`` certainly denotes a Flax linen Module class."""
    return _linen(values, expr, "module_class") is not None


def is_linen_classdef(model: SemanticModel, node: cst.ClassDef) -> bool:
    """``node`` is a Flax linen Module class."""
    return module_family(model, node) == "flax"


def linen_constructor(values: Values, expr: cst.CSTNode) -> cst.Call | None:
    """The constructor call that built the Flax linen Module instance ``expr`` certainly is (the
    first one, when it may be any of several)."""
    instance = _linen(values, expr, "module_instance")
    return instance.node if instance is not None and isinstance(instance.node, cst.Call) else None


def linen_class_method(values: Values, expr: cst.CSTNode) -> cst.FunctionDef | None:
    """The instance method ``expr`` names through its Module class (``Block.__call__``)."""
    if not isinstance(expr, cst.Attribute):
        return None
    cls = _linen(values, expr.value, "module_class")
    found = method(values.model, cls.definition, expr.attr.value) if cls is not None and cls.definition else None
    return found if found is not None and is_instance_method(values.model, found) else None


def _linen(values: Values, expr: cst.CSTNode, kind: Kind) -> Value | None:
    """The first value ``expr`` can hold, when every one is a linen Module class (or instance)."""
    found = values.possible(expr)
    if not found or any(v.kind != kind or v.framework != "flax" for v in found):
        return None
    return found[0]


def bound_linen_method(model: SemanticModel, expr: cst.CSTNode) -> cst.FunctionDef | None:
    """The plain method ``expr`` (``self.f``) certainly is, bound to a Module instance."""
    if not isinstance(expr, cst.Attribute):
        return None
    owner = _self_class(model, expr.value)
    if owner is None:
        return None
    members = _class_members(model, owner, expr.attr.value)
    if not members or len(members) != 1 or members[0].kind != "def":
        return None
    method = members[0].node
    assert isinstance(method, cst.FunctionDef)
    if any(model.qualified_name(decorator_callee(d)) not in PLAIN_METHOD_DECORATORS for d in method.decorators):
        return None
    return method if _setup_assignments(model, owner, expr.attr.value) == [] else None


def _self_class(model: SemanticModel, expr: cst.CSTNode) -> cst.ClassDef | None:
    """The linen Module class whose method takes ``expr`` (a name) as its instance argument."""
    owner = receiver_class(model, expr)
    return owner if owner is not None and is_linen_classdef(model, owner) else None


def _class_members(model: SemanticModel, node: cst.ClassDef, name: str, depth: int = 0) -> list[Binding] | None:
    """The class-body bindings of ``name`` in the first class of ``node``'s bases (depth first)
    that binds it; [] when no local class does and Flax's own classes are all that is left; None
    when a base cannot be resolved."""
    if depth > _MAX_DEPTH:
        return None
    bindings = model.class_scopes[id(node)].bindings.get(name)
    if bindings:
        return bindings
    for base in node.bases:
        if model.qualified_name(base.value) in LINEN_MODULE_CLASSES:
            continue
        definition = model.definition(base.value)
        if not isinstance(definition, cst.ClassDef):
            return None
        found = _class_members(model, definition, name, depth + 1)
        if found != []:
            return found
    return []


def _setup_assignments(model: SemanticModel, node: cst.ClassDef, attr: str) -> list[cst.BaseExpression] | None:
    """The values ``setup`` assigns to ``self.<attr>`` (None when setup is not certainly known)."""
    members = _class_members(model, node, "setup")
    if members == []:
        return []
    if not members or len(members) != 1 or members[0].kind != "def":
        return None
    setup = members[0].node
    assert isinstance(setup, cst.FunctionDef)
    params = (*setup.params.posonly_params, *setup.params.params)
    if not params:
        return None
    instance = params[0].name.value
    values = []
    for attribute in model.attributes:
        receiver = attribute.value
        if attribute.attr.value != attr or not isinstance(receiver, cst.Name) or receiver.value != instance:
            continue
        info = model.enclosing_function(attribute)
        if info is None or info.node is not setup:
            continue
        parent = model.parent(attribute)
        if isinstance(parent, cst.AssignTarget):
            values.append(model.parent(parent).value)  # type: ignore[union-attr]  # an AssignTarget's parent is an Assign
        elif isinstance(parent, cst.AnnAssign) and parent.target is attribute and parent.value is not None:
            values.append(parent.value)
    return values
