"""The functions a checkpoint traces, and the same-module code they call.

For each checkpoint site, the function(s) whose body JAX traces under the checkpoint, when they are
certain:

    @jax.checkpoint def f / f = jax.checkpoint(f)     the def (a name bound once to a def or lambda, or
                                                      re-bound: the binding that reaches the site)
    jax.checkpoint(lambda x: ...)                     the lambda
    jax.checkpoint(functools.partial(f, a, k=v))      f, with ``a`` and ``k`` bound (constants)
    nn.remat(Block) / nn.remat(partial(Block, ...))   ``Block.__call__`` (or the ``methods=`` listed),
                                                      and the methods they call through ``self.m(...)``
    nn.remat(body_fn) / nn.remat(Block.method)        the function; its first parameter is the Module
    hk.remat(layer) / nnx.remat(Block(...))           ``__call__`` of a local class instance
    jax.checkpoint(self.f) / hk.remat(C.f)            the method (bound: ``self`` is not an argument)

Anything else (a class or function from another module, a value computed at run time) has no
body here, and rules stay silent about it.

``CheckpointedFunction.args`` are the positional parameters that receive the checkpoint's
positional arguments, in order: ``static_argnums`` indexes them (see ``static_args``). The
``receiver`` is a Module that Flax passes itself, or the instance of a bound method: never one
of JAX's arguments.

``Bodies.helpers`` is the same-module call graph: the functions a body calls (by a name bound
once to a def, or ``self.m(...)`` for a method of the same class), transitively, with the call in
the body through which each is reached (REM201 reports there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import libcst as cst

from remat_lint.analysis.reaching import reaching_bindings
from remat_lint.analysis.semantic import SemanticModel, child_nodes
from remat_lint.analysis.sites import RematSite
from remat_lint.apis import PARTIAL
from remat_lint.apis.jax import CALLBACKS

Function = cst.FunctionDef | cst.Lambda

_MAX_DEPTH = 8
_NOT_BOUND_TO_SELF = frozenset({"builtins.staticmethod", "builtins.classmethod"})


@dataclass(eq=False)
class CheckpointedFunction:
    site: RematSite
    node: Function
    args: tuple[cst.Param, ...]  # the parameters that receive the checkpoint's positional arguments
    receiver: cst.Param | None  # the Module (Flax) or bound instance: not a JAX argument
    bound: frozenset[str]  # parameters ``functools.partial`` binds: constants, never traced
    star_args: bool  # ``*args``: positional arguments beyond ``args`` go there
    entry: bool  # JAX calls it with the checkpoint's arguments (False: a method the entry calls)

    @property
    def keyword_only(self) -> tuple[cst.Param, ...]:
        return tuple(self.node.params.kwonly_params)


@dataclass(frozen=True)
class HelperCall:
    """A same-module function that a checkpointed body reaches through ``call`` (in the body)."""

    call: cst.Call
    function: Function


class Bodies:
    """Every checkpointed function of a module, and what they call."""

    def __init__(self, model: SemanticModel, sites: list[RematSite]) -> None:
        self.model = model
        self.functions: list[CheckpointedFunction] = []
        for site in sites:
            self.functions.extend(_Resolver(model, site).functions())
        self._checkpointed = {id(f.node) for f in self.functions}
        self._nodes: dict[int, list[cst.CSTNode]] = {}

    def nodes(self, function: Function) -> list[cst.CSTNode]:
        """Every node of ``function``'s body that runs when it is traced, nested functions included
        except those handed to a run-time callback (``jax.debug.callback(f, ...)``)."""
        cached = self._nodes.get(id(function))
        if cached is None:
            excluded = self._callback_functions(function)
            cached = self._nodes[id(function)] = list(_walk(function.body, excluded))
        return cached

    def calls(self, function: Function) -> Iterator[cst.Call]:
        return (node for node in self.nodes(function) if isinstance(node, cst.Call))

    def helpers(self, function: Function) -> Iterator[HelperCall]:
        """Same-module functions reached from ``function`` (transitively), each with the call in
        ``function`` through which it is first reached. Checkpointed functions are left out:
        they are analysed as bodies of their own, and so are functions nested in one already
        walked (``nodes`` includes them: their statements are reported where they are)."""
        seen = {id(function)}
        for call in self.calls(function):
            start = self.callee(call)
            if start is None or id(start) in seen or id(start) in self._checkpointed:
                continue
            stack = [start]
            while stack:
                current = stack.pop()
                if id(current) in seen or id(current) in self._checkpointed or self._nested_in(current, seen):
                    continue
                seen.add(id(current))
                yield HelperCall(call, current)
                stack.extend(c for c in map(self.callee, self.calls(current)) if c is not None)

    def _nested_in(self, function: Function, walked: set[int]) -> bool:
        return any(id(a) in walked for a in self.model.ancestors(function))

    def callee(self, call: cst.Call) -> Function | None:
        """The same-module function ``call`` certainly calls: a name bound once to a def or lambda
        (not a class), or ``self.m(...)`` where ``m`` is a method of ``self``'s class."""
        func = call.func
        if isinstance(func, cst.Name):
            definition = self.model.definition(func)
            if isinstance(definition, cst.FunctionDef) and self.model.functions[id(definition)].class_node is None:
                return definition
            return definition if isinstance(definition, cst.Lambda) else None
        if isinstance(func, cst.Attribute):
            owner = receiver_class(self.model, func.value)
            if owner is not None:
                return method(self.model, owner, func.attr.value)
        return None

    def _callback_functions(self, function: Function) -> set[int]:
        excluded: set[int] = set()
        for node in _walk(function.body, set()):
            if not isinstance(node, cst.Call) or self.model.qualified_name(node.func) not in CALLBACKS:
                continue
            first = next((a.value for a in node.args if a.keyword is None and not a.star), None)
            definition = self.model.definition(first) if first is not None else None
            if definition is not None:
                excluded.add(id(definition))
        return excluded


def _walk(node: cst.CSTNode, excluded: set[int]) -> Iterator[cst.CSTNode]:
    stack = [node]
    while stack:
        current = stack.pop()
        if id(current) in excluded:
            continue
        yield current
        # Nested functions included: their bodies run when called, at trace time.
        stack.extend(reversed(list(child_nodes(current))))


def positional_params(node: Function) -> tuple[cst.Param, ...]:
    return (*node.params.posonly_params, *node.params.params)


def receiver_class(model: SemanticModel, expr: cst.CSTNode) -> cst.ClassDef | None:
    """The class whose instance method takes ``expr`` (a name) as its first parameter."""
    binding = model.single_binding(expr)
    if binding is None or binding.kind != "param":
        return None
    owner = model.parent(model.parent(binding.node))  # Param -> Parameters -> def
    if not isinstance(owner, cst.FunctionDef) or not is_instance_method(model, owner):
        return None
    if positional_params(owner)[0] is not binding.node:
        return None
    return model.functions[id(owner)].class_node


def is_call_method(node: Function) -> bool:
    """``node`` is a ``__call__`` def (a lambda is no method)."""
    return isinstance(node, cst.FunctionDef) and node.name.value == "__call__"


def is_instance_method(model: SemanticModel, node: cst.FunctionDef) -> bool:
    info = model.functions.get(id(node))
    if info is None or info.class_node is None or not positional_params(node):
        return False
    return not any(model.qualified_name(decorator_callee(d)) in _NOT_BOUND_TO_SELF for d in node.decorators)


def instance_class(model: SemanticModel, expr: cst.CSTNode) -> cst.ClassDef | None:
    """The class of ``block.__class__`` or ``type(block)`` where the only binding of ``block`` that
    reaches there is ``block = Block(...)`` (a class of this module; in a loop body too, where it is
    conditional: otherwise the name is unbound)."""
    if isinstance(expr, cst.Attribute) and expr.attr.value == "__class__":
        instance: cst.BaseExpression = expr.value
    elif (
        isinstance(expr, cst.Call)
        and model.qualified_name(expr.func) == "builtins.type"
        and len(expr.args) == 1
        and expr.args[0].keyword is None
        and not expr.args[0].star
    ):
        instance = expr.args[0].value
    else:
        return None
    if not isinstance(instance, cst.Name):
        return None
    bindings, _ = reaching_bindings(model, instance)
    value = bindings[0].value if len(bindings) == 1 and bindings[0].kind == "assign" else None
    cls = model.definition(value.func) if isinstance(value, cst.Call) else None
    return cls if isinstance(cls, cst.ClassDef) else None


def decorator_callee(decorator: cst.Decorator) -> cst.BaseExpression:
    """What a decorator applies: ``f`` for ``@f`` and ``@f(...)``."""
    expr = decorator.decorator
    return expr.func if isinstance(expr, cst.Call) else expr


def method(model: SemanticModel, cls: cst.ClassDef, name: str, depth: int = 0) -> cst.FunctionDef | None:
    """The method ``name`` of ``cls`` when certain: one plain ``def`` in its body, or in a local
    base class (depth first) when the body does not bind the name."""
    if depth > _MAX_DEPTH:
        return None
    bindings = model.class_scopes[id(cls)].bindings.get(name)
    if bindings:
        node = bindings[0].node
        if len(bindings) != 1 or not isinstance(node, cst.FunctionDef) or not is_instance_method(model, node):
            return None
        return node
    for base in cls.bases:
        definition = model.definition(base.value)
        if isinstance(definition, cst.ClassDef):
            found = method(model, definition, name, depth + 1)
            if found is not None:
                return found
    return None


class _Resolver:
    """The checkpointed functions of one site."""

    def __init__(self, model: SemanticModel, site: RematSite) -> None:
        self.model = model
        self.site = site
        self.flax = site.api.family == "flax"

    def functions(self) -> list[CheckpointedFunction]:
        target = self.site.target
        if target is None:
            return []
        if isinstance(target, cst.ClassDef):
            found = self._flax_class(target) if self.flax else []
        elif isinstance(target, cst.FunctionDef):
            # Flax passes the Module as the first argument (a method's ``self``, or a function's
            # first parameter); JAX's transforms see a decorated method's ``self`` as argument 0.
            found = [self._function(target, receiver=self.flax)]
        else:
            found = self._expr(target, 0, frozenset(), 0)
        return self._with_self_calls(found) if self.flax else found

    def _function(
        self, node: Function, receiver: bool, drop: int = 0, bound: frozenset[str] = frozenset(), entry: bool = True
    ) -> CheckpointedFunction:
        params = positional_params(node)
        first = params[0] if receiver and params else None
        args = params[1:] if first is not None else params
        bound = bound | {p.name.value for p in args[:drop]}
        star = isinstance(node.params.star_arg, cst.Param)
        return CheckpointedFunction(self.site, node, tuple(args[drop:]), first, bound, star, entry)

    def _expr(self, expr: cst.CSTNode, drop: int, bound: frozenset[str], depth: int) -> list[CheckpointedFunction]:
        if depth > _MAX_DEPTH:
            return []
        model = self.model
        if isinstance(expr, cst.Call):
            return self._call(expr, drop, bound, depth)
        if isinstance(expr, cst.Attribute):
            return self._attribute(expr, drop, bound)
        definition = model.definition(expr)
        if definition is None and isinstance(expr, cst.Name):
            definition = self._reaching_definition(expr)
        if isinstance(definition, cst.ClassDef):
            return self._flax_class(definition) if self.flax and not drop else []
        if isinstance(definition, cst.FunctionDef):
            if model.functions[id(definition)].class_node is not None:
                return []  # a name in a class body: not how functions are checkpointed
            return [self._function(definition, self.flax, drop, bound)]
        if isinstance(definition, cst.Lambda):
            return [self._function(definition, self.flax, drop, bound)]
        value = model.assigned_value(expr)
        return self._expr(value, drop, bound, depth + 1) if isinstance(value, cst.Call) else []

    def _reaching_definition(self, name: cst.Name) -> Function | cst.ClassDef | None:
        """The def, class or lambda a re-bound name certainly holds where it is used:
        ``f = jax.checkpoint(f)`` checkpoints the ``def f`` above it."""
        bindings, certain = reaching_bindings(self.model, name)
        if not certain:
            return None
        binding = bindings[0]
        if binding.kind in ("def", "class"):
            return binding.node  # type: ignore[return-value]  # a def or class binding's node is its FunctionDef or ClassDef
        return binding.value if binding.kind == "assign" and isinstance(binding.value, cst.Lambda) else None

    def _call(self, call: cst.Call, drop: int, bound: frozenset[str], depth: int) -> list[CheckpointedFunction]:
        model = self.model
        lifted = instance_class(model, call)  # ``nn.remat(type(block))``
        if lifted is not None:
            return self._flax_class(lifted) if self.flax and not drop else []
        if model.qualified_name(call.func) in PARTIAL:
            if any(a.star for a in call.args) or not call.args or call.args[0].keyword is not None:
                return []
            inner = call.args[0].value
            if self.flax and isinstance(model.definition(inner), cst.ClassDef):
                return self._expr(inner, drop, bound, depth + 1)  # partial(Block, cfg): constructor fields
            positional = sum(1 for a in call.args[1:] if a.keyword is None)
            keywords = {a.keyword.value for a in call.args if a.keyword is not None}
            return self._expr(inner, drop + positional, bound | keywords, depth + 1)
        cls = model.definition(call.func)
        if isinstance(cls, cst.ClassDef) and not self.flax:
            # hk.remat(Layer(...)) / nnx.remat(Block(...)): the instance's __call__.
            found = method(model, cls, "__call__")
            return [self._function(found, True, drop, bound)] if found is not None else []
        return []

    def _attribute(self, expr: cst.Attribute, drop: int, bound: frozenset[str]) -> list[CheckpointedFunction]:
        model = self.model
        cls = instance_class(model, expr)
        if cls is not None:
            return self._flax_class(cls) if self.flax and not drop else []
        owner = receiver_class(model, expr.value)
        if owner is not None:
            # ``self.f``: a bound method (Flax rejects it: REM004).
            found = method(model, owner, expr.attr.value)
            return [self._function(found, True, drop, bound)] if found is not None and not self.flax else []
        defined = model.definition(expr.value)
        if isinstance(defined, cst.ClassDef):
            # ``Block.f``: the plain function; Flax passes the Module as its first argument.
            found = method(model, defined, expr.attr.value)
            return [self._function(found, self.flax, drop, bound)] if found is not None else []
        return []

    def _flax_class(self, cls: cst.ClassDef) -> list[CheckpointedFunction]:
        names = self._lifted_methods()
        found = [method(self.model, cls, name) for name in names]
        return [self._function(m, True) for m in found if m is not None]

    def _lifted_methods(self) -> list[str]:
        """``__call__``, or the ``methods=`` Flax lifts (a literal list, tuple or dict of names)."""
        arg = self.site.keyword("methods")
        if arg is None or (isinstance(arg.value, cst.Name) and arg.value.value == "None"):
            return ["__call__"]
        value = arg.value
        if isinstance(value, cst.Dict):
            items = [e.key for e in value.elements if isinstance(e, cst.DictElement)]
        elif isinstance(value, (cst.List, cst.Tuple)):
            items = [e.value for e in value.elements]
        else:
            return []
        return [
            i.evaluated_value for i in items if isinstance(i, cst.SimpleString) and isinstance(i.evaluated_value, str)
        ]

    def _with_self_calls(self, entries: list[CheckpointedFunction]) -> list[CheckpointedFunction]:
        """Add the methods Flax entry methods call through their Module (``self.m(...)``): they run
        inside the lifted checkpoint too (not entries: their arguments are whatever the entry
        passes)."""
        result = list(entries)
        seen = {id(f.node) for f in entries}
        queue = [f for f in entries if f.receiver is not None]
        while queue:
            current = queue.pop()
            for call in _walk(current.node.body, set()):
                found = self._self_method(current, call)
                if found is not None and id(found) not in seen:
                    seen.add(id(found))
                    called = self._function(found, True, entry=False)
                    result.append(called)
                    queue.append(called)
        return result

    def _self_method(self, caller: CheckpointedFunction, node: cst.CSTNode) -> cst.FunctionDef | None:
        """The method ``node`` calls when it is ``self.m(...)`` on ``caller``'s Module."""
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
            return None
        binding = self.model.single_binding(node.func.value)
        if binding is None or caller.receiver is None or binding.node is not caller.receiver:
            return None
        owner = receiver_class(self.model, node.func.value)
        return method(self.model, owner, node.func.attr.value) if owner is not None else None
