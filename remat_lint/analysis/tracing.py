"""Which values of a checkpointed function are certainly traced (tracers while JAX traces it).

A checkpoint traces every argument it is called with (positional and keyword) except those
``static_argnums`` selects; ``functools.partial`` arguments and parameters left at their default
are plain Python values. So a parameter of an entry function is certainly traced when it is
one of its ``args``, not static, not bound, not rebound in the body, and either has no default
or is passed by a call this module makes (``invocations``). Locals assigned from traced values
are traced; ``.shape``/``.ndim``/``.dtype``/``.size``, ``len()``, ``isinstance()`` and ``is``
comparisons of them are not.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from remat_lint.analysis.bodies import Bodies, CheckpointedFunction, receiver_class
from remat_lint.analysis.reaching import reaching_bindings
from remat_lint.analysis.semantic import Scope, SemanticModel, child_nodes, is_step
from remat_lint.analysis.sites import RematSite
from remat_lint.analysis.static_args import convention, fails_at_wrap, static_params
from remat_lint.analysis.values import Values
from remat_lint.apis import PARTIAL

# Trace-time facts about a traced array (Python values, not tracers).
STATIC_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "size", "aval", "sharding", "weak_type", "itemsize"})
STATIC_CALLS = frozenset(
    {"builtins.len", "builtins.isinstance", "builtins.type", "builtins.callable", "builtins.hasattr", "builtins.id"}
)


def traced_params(values: Values, fn: CheckpointedFunction) -> dict[str, cst.Param] | None:
    """The parameters of ``fn`` that are certainly traced; None when ``static_argnums`` is unknown."""
    if not fn.entry:
        return {}
    model = values.model
    if fails_at_wrap(model, fn.site):
        return None  # nothing is traced
    static = static_params(fn.site, fn, values)  # ``static_argnums=STATIC`` too
    if static is None:
        return None
    scope = model.functions[id(fn.node)].scope
    passed: set[str] | None = None
    traced = {}
    for param in fn.args:
        name = param.name.value
        rebound = [b for b in scope.bindings.get(name, ()) if b.node is not param]
        if name in static or not all(is_step(b, name) for b in rebound):
            continue  # static, or rebound in the body (``deterministic = nn.merge_param(...)``; ``n -= 1`` stays traced)
        if param.default is not None:
            if passed is None:
                passed = _passed_params(values, fn)
            if name not in passed:
                continue
        traced[name] = param
    return traced


def _passed_params(values: Values, fn: CheckpointedFunction) -> set[str]:
    """Defaulted parameters that some call in this module passes a value (not None) for."""
    return {name for name, value in passed_arguments(values, fn) if not _is_none(value)}


def literal_leaf_params(values: Values, fn: CheckpointedFunction) -> frozenset[str]:
    """Parameters that some call in this module passes ``True``/``False`` or a number (a literal,
    or what the value layer finds: ``Phase.TRAIN.value``, a constant): traced, that value is a
    scalar tracer, so ``bool()`` of it fails whatever the annotation."""
    return frozenset(name for name, value in passed_arguments(values, fn) if _is_scalar(values, value))


def passed_arguments(values: Values, fn: CheckpointedFunction) -> Iterator[tuple[str, cst.BaseExpression]]:
    """``(parameter name, value)`` for every argument the module's calls of ``fn`` pass."""
    # A Flax function target is called with its Module first: not one of ``fn.args``.
    skip = 1 if fn.site.api.family == "flax" and not flax_class_target(values, fn.site) else 0
    for call in invocations(values, fn.site):
        if any(a.star for a in call.args):
            continue
        positional = [a for a in call.args if a.keyword is None][skip:]
        for param, arg in zip(fn.args, positional, strict=False):  # extra arguments go to *args
            yield param.name.value, arg.value
        if convention(fn.site) != "flax-no-self":  # nn_partitioning.remat drops keywords (REM016)
            yield from ((a.keyword.value, a.value) for a in call.args if a.keyword is not None)


def _is_scalar(values: Values, value: cst.BaseExpression) -> bool:
    held = values.possible(value)
    return bool(held) and all(v.kind in ("bool", "int", "float") and v.literal is not None for v in held or ())


def _is_none(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Name) and value.value == "None"


def invocations(values: Values, site: RematSite) -> list[cst.Call]:
    """Calls in this module that certainly call the checkpointed callable with its arguments.

    ``g = jax.checkpoint(f); g(...)``, ``jax.checkpoint(f)(...)``, ``@jax.checkpoint def f`` then
    ``f(...)``; for a Flax Module class, the calls of its instances: ``nn.remat(Block)(cfg)(...)``,
    ``R = nn.remat(Block)`` then ``R(cfg)(...)`` or ``layer = R(cfg)`` then ``layer(...)``.
    """
    model = values.model
    if isinstance(site.node, cst.Decorator):
        decorated = model.parent(site.node)
        if not isinstance(decorated, cst.FunctionDef) or site.api.family == "flax":
            return []
        return [c for c in model.calls if model.definition(c.func) is decorated]
    if site.call is None:
        return []
    results = calls_of(model, site.call)
    if site.api.family == "flax" and flax_class_target(values, site):
        return [call for instance in results for call in calls_of(model, instance)]
    return results


def flax_class_target(values: Values, site: RematSite) -> bool:
    """The site lifts a Module class (``Block``, ``partial(Block, ...)``, ``block.__class__``; a
    class imported from another module of the project too), not a function."""
    model, target = values.model, site.target
    if isinstance(target, cst.Call) and model.qualified_name(target.func) in PARTIAL and target.args:
        target = target.args[0].value
    if isinstance(target, cst.ClassDef) or (target is not None and isinstance(model.definition(target), cst.ClassDef)):
        return True
    # ``type(block)`` of ``block = Block()`` with ``Block`` imported: only a placeholder says it is a class.
    classes = values.deferred_imports.possible(target) if target is not None else None
    return bool(classes) and all(v.kind == "module_class" for v in classes or ())


def calls_of(model: SemanticModel, value: cst.BaseExpression) -> list[cst.Call]:
    """Calls of the value ``value`` evaluates to: applied at once, through a name bound once to it
    or ``self.x`` assigned once in its class (Flax's ``setup``); for an element of a list
    comprehension (``self.blocks = [R(cfg) for _ in ...]``), the calls of the loop variable of
    each ``for block in self.blocks:``; for a branch of ``remat(C) if cfg.remat else C``, the
    calls of that expression's value (the remat's whenever the configuration turns it on)."""
    parent = model.parent(value)
    if isinstance(parent, cst.IfExp) and value in (parent.body, parent.orelse):
        return calls_of(model, parent)
    if isinstance(parent, cst.Call) and parent.func is value:
        return [parent]
    if isinstance(parent, cst.ListComp) and parent.elt is value:
        return [call for use in _uses(model, parent) for call in _loop_calls(model, use)]
    return [
        use_parent
        for use in _uses(model, value)
        if isinstance(use_parent := model.parent(use), cst.Call) and use_parent.func is use
    ]


def _uses(model: SemanticModel, value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """Where the value assigned to a name (bound once, or the binding reaching there) or to
    ``self.x`` (assigned once in the class) is read."""
    parent = model.parent(value)
    if not isinstance(parent, cst.Assign) or len(parent.targets) != 1:
        return []
    target = parent.targets[0].target
    if isinstance(target, cst.Name):
        if isinstance(value, cst.ListComp):  # read by ``for`` loops
            names = [
                f.iter
                for f in _walk(model.scope_of(value).node)
                if isinstance(f, cst.For) and isinstance(f.iter, cst.Name)
            ]
        else:
            names = model.called_names.get(target.value, [])
        return [n for n in names if n.value == target.value and _holds(model, n, value)]
    if isinstance(target, cst.Attribute):
        return _self_attribute_uses(model, target)
    return []


def _self_attribute_uses(model: SemanticModel, target: cst.Attribute) -> list[cst.BaseExpression]:
    """``self.block = ...`` in a method, assigned nowhere else in the class: the reads of
    ``self.block`` in the methods of that class."""
    assignment, uses = self_attribute(model, target)
    return list(uses) if assignment is not None and assignment.targets[0].target is target else []


def self_attribute(model: SemanticModel, attribute: cst.Attribute) -> tuple[cst.Assign | None, list[cst.Attribute]]:
    """For ``self.x`` in a method: the one ``self.x = ...`` of its class (Flax's ``setup``; None
    when there are more, or none) and every other ``self.x`` in the class's methods."""
    owner = receiver_class(model, attribute.value)
    if owner is None:
        return None, []
    name = attribute.attr.value
    uses = [a for a in model.attributes if a.attr.value == name and receiver_class(model, a.value) is owner]
    written = [a for a in uses if isinstance(model.parent(a), (cst.AssignTarget, cst.AugAssign))]
    assignment = model.parent(model.parent(written[0])) if len(written) == 1 else None
    if not isinstance(assignment, cst.Assign) or len(assignment.targets) != 1:
        return None, []
    return assignment, [a for a in uses if a is not written[0]]


def _loop_calls(model: SemanticModel, iterable: cst.BaseExpression) -> list[cst.Call]:
    """``for block in <iterable>: ... block(...)``: the calls of the loop variable in the body,
    when the body does not rebind it."""
    loop = model.parent(iterable)
    if not isinstance(loop, cst.For) or loop.iter is not iterable or not isinstance(loop.target, cst.Name):
        return []
    var = loop.target.value
    nodes = list(_walk(loop.body))
    if any(isinstance(n, (cst.AssignTarget, cst.For)) and _binds(n, var) for n in nodes):
        return []
    return [n for n in nodes if isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value == var]


def _binds(node: cst.AssignTarget | cst.For, name: str) -> bool:
    target = node.target
    return any(isinstance(n, cst.Name) and n.value == name for n in _walk(target))


def _walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    found, stack = [], [node]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(child_nodes(current))
    return found


def _holds(model: SemanticModel, name: cst.Name, value: cst.BaseExpression) -> bool:
    """``name`` holds ``value`` here whenever that assignment ran: bound once to it, or re-bound
    (``f = jax.checkpoint(f)``, ``if cfg.remat: block = nn.remat(Block)``) with that assignment
    one that reaches this use (the call is the checkpoint's whenever the configuration turns it on)."""
    if model.assigned_value(name) is value:
        return True
    bindings, _ = reaching_bindings(model, name)
    return any(b.value is value for b in bindings)


class TracedValues:
    """Traced-ness of expressions in one checkpointed function."""

    def __init__(self, values: Values, bodies: Bodies, fn: CheckpointedFunction) -> None:
        self.model = values.model
        self.scope: Scope = self.model.functions[id(fn.node)].scope
        params = traced_params(values, fn)
        self.names: set[str] = set(params or {})
        # Locals assigned from traced values (twice: a loop may assign before it reads).
        for _ in range(2):
            for node in bodies.nodes(fn.node):
                if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)) and node.value is not None:
                    if self.is_traced(node.value):
                        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
                        self.names.update(n.value for t in targets for n in _target_names(t) if self._local(n))

    def _local(self, name: cst.Name) -> bool:
        scope = self.model.scope_of_name.get(id(name))
        return scope is not None and scope.owner_of(name.value) is self.scope

    def is_traced(self, expr: cst.CSTNode) -> bool:
        if isinstance(expr, cst.Name):
            return expr.value in self.names and self._local(expr)
        if isinstance(expr, cst.Attribute):
            return expr.attr.value not in STATIC_ATTRIBUTES and self.is_traced(expr.value)
        if isinstance(expr, cst.Call) and self.model.qualified_name(expr.func) in STATIC_CALLS:
            return False
        if isinstance(expr, cst.Comparison) and any(
            isinstance(t.operator, (cst.Is, cst.IsNot)) for t in expr.comparisons
        ):
            return False
        if isinstance(expr, (cst.Lambda, cst.FunctionDef)):
            return False
        return any(self.is_traced(child) for child in child_nodes(expr))


def _target_names(target: cst.BaseExpression) -> list[cst.Name]:
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _target_names(e.value)]
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return []
