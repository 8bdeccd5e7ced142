"""What certainly is a Flax linen Module class, instance or bound method (REM004, REM009).

Certain means:
- a class: a known ``flax.linen`` Module class, a local class deriving from one through local
  classes, or a Flax remat of such a class (``nn.remat(Block)``, or a name bound once to it); a
  re-bound name (``Block = nn.remat(Block)``) through the binding that certainly reaches the use;
- an instance: a constructor call of such a class, a name bound (or re-bound) to an instance, or
  ``self.x`` where ``self`` is a Module method's first parameter and the Module's ``setup``
  assigns only instances to ``self.x``;
- a bound method: ``self.f`` where ``f`` is a plain method defined in the Module's class body.

An instance is also what a call of a same-module function or method returns when every
``return`` builds one (``nn.remat(self.make_block())``).

Anything else is unknown and never reported: a class held in a variable or a dataclass field
(``self.block_cls``), ``functools.partial(Block, ...)``, a call of a function that returns a class,
a class with a base that cannot be resolved.
"""

from __future__ import annotations

import libcst as cst

from remat_lint.analysis.bodies import decorator_callee, is_instance_method, method, receiver_class
from remat_lint.analysis.reaching import reaching_bindings
from remat_lint.analysis.semantic import Binding, SemanticModel, iterated
from remat_lint.analysis.values import function_returns
from remat_lint.apis import LINEN_MODULE_CLASSES, remat_api
from remat_lint.apis.linen import PLAIN_METHOD_DECORATORS

_MAX_DEPTH = 16
# Decorators that leave ``self.f`` a bound method.


def is_linen_class(model: SemanticModel, expr: cst.CSTNode, depth: int = 0) -> bool:
    """``expr`` certainly denotes a Flax linen Module class."""
    if depth > _MAX_DEPTH:
        return False
    if model.qualified_name(expr) in LINEN_MODULE_CLASSES:
        return True
    if isinstance(expr, cst.Call):  # nn.remat(Block) is a Module class too
        api = remat_api(model.qualified_name(expr.func))
        target = next((a.value for a in expr.args if a.keyword is None and not a.star), None)
        is_flax = api is not None and api.family == "flax"
        return is_flax and target is not None and is_linen_class(model, target, depth + 1)
    value = model.assigned_value(expr)
    if isinstance(value, cst.Call):  # RematBlock = nn.remat(Block)
        return is_linen_class(model, value, depth + 1)
    definition = model.definition(expr)
    if definition is None and (binding := _reaching(model, expr)) is not None:  # Block = nn.remat(Block)
        if binding.kind == "class":
            definition = binding.node  # type: ignore[assignment]  # a class binding's node is its ClassDef
        elif binding.kind == "assign" and isinstance(binding.value, cst.Call):
            return is_linen_class(model, binding.value, depth + 1)
    return isinstance(definition, cst.ClassDef) and is_linen_classdef(model, definition, depth + 1)


def is_linen_classdef(model: SemanticModel, node: cst.ClassDef, depth: int = 0) -> bool:
    return any(is_linen_class(model, base.value, depth + 1) for base in node.bases)


def linen_constructor(model: SemanticModel, expr: cst.CSTNode, depth: int = 0) -> cst.Call | None:
    """The constructor call that certainly created the Module instance ``expr`` denotes."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(expr, cst.Call):
        return expr if is_linen_class(model, expr.func) else _factory_constructor(model, expr.func, depth)
    if isinstance(expr, cst.Subscript):  # ``self.blocks[0]``
        return _element_constructor(model, expr.value, depth + 1)
    if isinstance(expr, cst.Name):
        value = model.assigned_value(expr)
        binding = _reaching(model, expr) if value is None else None
        if binding is not None and binding.kind == "assign":
            value = binding.value  # re-bound: the assignment that reaches this use
        elif binding is not None and (collection := iterated(binding)) is not None:
            return _element_constructor(model, collection, depth + 1)  # ``for block in self.blocks``
        return linen_constructor(model, value, depth + 1) if value is not None else None
    owner = _self_class(model, expr.value) if isinstance(expr, cst.Attribute) else None
    if owner is None:
        return None
    name = expr.attr.value  # type: ignore[attr-defined]  # an owner is only found for an Attribute
    values = _setup_assignments(model, owner, name)
    if not values or _class_members(model, owner, name) != []:
        return None  # not assigned in setup, or also a class attribute or field
    constructors = [linen_constructor(model, value, depth + 1) for value in values]
    return constructors[0] if all(constructors) else None


def _element_constructor(model: SemanticModel, sequence: cst.BaseExpression, depth: int) -> cst.Call | None:
    """The constructor that built every element of ``sequence``: a list or tuple of Module
    instances, a comprehension that builds one, or a name or ``setup`` attribute holding either."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(sequence, (cst.List, cst.Tuple)) and sequence.elements:
        if any(not isinstance(e, cst.Element) for e in sequence.elements):
            return None  # ``[*blocks]``
        constructors = [linen_constructor(model, e.value, depth + 1) for e in sequence.elements]
        return constructors[0] if all(constructors) else None
    if isinstance(sequence, (cst.ListComp, cst.GeneratorExp)):
        return linen_constructor(model, sequence.elt, depth + 1)
    if isinstance(sequence, cst.Name) and (value := model.assigned_value(sequence)) is not None:
        return _element_constructor(model, value, depth + 1)
    owner = _self_class(model, sequence.value) if isinstance(sequence, cst.Attribute) else None
    if owner is None:
        return None
    values = _setup_assignments(model, owner, sequence.attr.value)  # type: ignore[attr-defined]  # an owner is only found for an Attribute
    if not values or _class_members(model, owner, sequence.attr.value) != []:  # type: ignore[attr-defined]  # an owner is only found for an Attribute
        return None
    constructors = [_element_constructor(model, value, depth + 1) for value in values]
    return constructors[0] if all(constructors) else None


def _factory_constructor(model: SemanticModel, func: cst.BaseExpression, depth: int) -> cst.Call | None:
    """A call of a same-module function or method (``self.make_block()``) whose every ``return``
    builds a Module instance: the first such constructor."""
    factory = model.definition(func)
    if factory is None and isinstance(func, cst.Attribute) and (cls := receiver_class(model, func.value)) is not None:
        factory = method(model, cls, func.attr.value)
    if not isinstance(factory, cst.FunctionDef) or factory.decorators:
        return None
    returns = function_returns(factory)
    if not returns or any(r is None for r in returns):
        return None
    constructors = [linen_constructor(model, r, depth + 1) for r in returns if r is not None]
    return constructors[0] if all(constructors) else None


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


def linen_class_method(model: SemanticModel, expr: cst.CSTNode) -> cst.FunctionDef | None:
    """The instance method ``expr`` names through its Module class (``Block.__call__``)."""
    if not isinstance(expr, cst.Attribute) or not is_linen_class(model, expr.value):
        return None
    cls = model.definition(expr.value)
    found = method(model, cls, expr.attr.value) if isinstance(cls, cst.ClassDef) else None
    return found if found is not None and is_instance_method(model, found) else None


def _reaching(model: SemanticModel, expr: cst.CSTNode) -> Binding | None:
    """The one binding of a re-bound name that certainly reaches this use."""
    if not isinstance(expr, cst.Name):
        return None
    bindings, certain = reaching_bindings(model, expr)
    return bindings[0] if certain else None


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
