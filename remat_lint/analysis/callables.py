"""What a callable expression denotes where it is used: the checkpoint sites it is, and the function
whose body runs when it is called.

    jax.checkpoint(loss)                      the site, and ``loss``'s def
    loss  (after ``loss = jax.checkpoint(loss)``)    the same, through the binding that reaches the use
    @jax.checkpoint def loss                  the decorator site, and the def
    functools.partial(loss, batch=b)          whatever ``loss`` denotes (``jax.jit(loss)`` too)
    jax.checkpoint(f) if remat else f         either (``conditional``)
    lambda p: loss(p, x)                      the lambda (``wrapped``: the sites of ``loss``)
    self.loss  (in a method)                  the class's ``def loss`` (a plain one, when certain), or
                                              the value of its one ``self.loss = ...``

Names are resolved flow-sensitively: ``semantic.SemanticModel`` gives up on a name bound twice,
yet ``loss = jax.checkpoint(loss)`` is how whole functions are checkpointed. The binding that
reaches a use is the last one before it in the same scope (the last of all, for a use inside a
nested function: it runs later). When that binding is conditional (under ``if``/``for``/``while``/
``try``/``with``/``match``: ``if cfg.remat: loss = jax.checkpoint(loss)``), the ones before it
may reach too, and the name denotes what any of them does, marked ``conditional``.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import libcst as cst

from remat_lint.analysis.bodies import method, positional_params, receiver_class
from remat_lint.analysis.reaching import reaching_bindings
from remat_lint.analysis.semantic import Binding, SemanticModel, child_nodes
from remat_lint.analysis.sites import RematSite
from remat_lint.apis import SAME_FUNCTION, haiku

Function = cst.FunctionDef | cst.Lambda

_MAX_DEPTH = 8


@dataclass(eq=False)
class Denoted:
    """What a callable expression denotes. ``sites``: the checkpoints that wrap the whole callable
    (outermost first); ``function``: the def or lambda that runs; ``wrapped``: for a lambda whose
    body only calls a checkpointed callable, that callable's sites."""

    sites: list[RematSite] = field(default_factory=list)
    function: Function | None = None
    wrapped: list[RematSite] = field(default_factory=list)
    conditional: bool = False  # a name that is checkpointed on some paths only


def _either(options: list[Denoted]) -> Denoted:
    """What a name bound differently on different paths may denote: every checkpoint of any
    path (conditional), and the function when all paths agree."""
    functions = {id(o.function) for o in options}
    return Denoted(
        list({id(s): s for o in options for s in o.sites}.values()),
        options[0].function if len(functions) == 1 else None,
        list({id(s): s for o in options for s in o.wrapped}.values()),
        conditional=True,
    )


class Callables:
    """Resolution of callable expressions to checkpoint sites and functions, for one module."""

    def __init__(self, model: SemanticModel, sites: list[RematSite]) -> None:
        self.model = model
        self._site_of = {id(site.node): site for site in sites}
        self._attributes: dict[tuple[int, str], cst.BaseExpression | None] = {}

    def site_of(self, node: cst.CSTNode) -> RematSite | None:
        """The site whose node is ``node`` (a remat call, or a decorator)."""
        return self._site_of.get(id(node))

    def denote(self, expr: cst.CSTNode, depth: int = 0) -> Denoted:
        if depth > _MAX_DEPTH:
            return Denoted()
        model = self.model
        if isinstance(expr, cst.Lambda):
            inner = self.denote(expr.body.func, depth + 1) if isinstance(expr.body, cst.Call) else Denoted()
            return Denoted(function=expr, wrapped=inner.sites)
        if isinstance(expr, cst.Call):
            site = self.site_of(expr)
            if site is not None:
                inner = self.denote(site.target, depth + 1) if site.target is not None else Denoted()
                return Denoted([site, *inner.sites], inner.function)
            if model.qualified_name(expr.func) in SAME_FUNCTION and expr.args and not expr.args[0].keyword:
                return self.denote(expr.args[0].value, depth + 1)
            return Denoted()
        if isinstance(expr, cst.IfExp):  # jax.checkpoint(f) if remat else f
            return _either([self.denote(expr.body, depth + 1), self.denote(expr.orelse, depth + 1)])
        if isinstance(expr, cst.Name):
            bindings, certain = reaching_bindings(model, expr)
            found = [self._binding(b, depth) for b in bindings]
            if certain or not found:
                return found[0] if found else Denoted()
            return _either(found)
        if isinstance(expr, cst.Attribute):
            transformed = _haiku_transformed(model, expr)
            if transformed is not None:  # f.apply where f = hk.transform(loss): apply runs loss
                return self.denote(transformed, depth + 1)
            cls = receiver_class(model, expr.value)  # self.loss in a method: the class's own def
            if cls is None:
                return Denoted()
            found_method = method(model, cls, expr.attr.value)
            if found_method is not None:
                return self._def(found_method)
            value = self._instance_attribute(cls, expr.attr.value)  # self.loss = jax.checkpoint(...)
            return self.denote(value, depth + 1) if value is not None else Denoted()
        return Denoted()

    def _instance_attribute(self, cls: cst.ClassDef, name: str) -> cst.BaseExpression | None:
        """The value of ``self.<name> = value`` when it is the only write to that attribute in the
        class's methods."""
        key = (id(cls), name)
        if key not in self._attributes:
            writes: list[cst.BaseExpression | None] = []
            for info in self.model.functions.values():
                if info.class_node is cls and isinstance(info.node, cst.FunctionDef):
                    writes += self_writes(self.model, info.node, name)
            self._attributes[key] = writes[0] if len(writes) == 1 else None
        return self._attributes[key]

    def _binding(self, binding: Binding, depth: int) -> Denoted:
        if binding.kind == "def":
            return self._def(binding.node)  # type: ignore[arg-type]  # a def binding's node is its FunctionDef
        if binding.kind == "assign" and binding.value is not None:
            return self.denote(binding.value, depth + 1)
        return Denoted()  # a parameter, an import, a loop target...

    def _def(self, node: cst.FunctionDef) -> Denoted:
        sites = [site for d in node.decorators if (site := self.site_of(d)) is not None]
        return Denoted(sites, node)


def instance_attribute(model: SemanticModel, cls: cst.ClassDef, name: str) -> cst.BaseExpression | None:
    """The value of ``self.<name> = value`` when that is the only write to the attribute in the
    methods of ``cls`` and its body gives the name no value (``instance_writes``)."""
    writes = instance_writes(model, cls, name)
    return writes[0] if writes is not None and len(writes) == 1 else None


def instance_writes(model: SemanticModel, cls: cst.ClassDef, name: str) -> list[cst.BaseExpression | None] | None:
    """The values the methods of ``cls`` write to ``self.<name>`` (``self_writes``), when its body
    gives the name no value (a bare ``dropout: eqx.nn.Dropout`` field declaration is fine)."""
    declared = model.class_scopes[id(cls)].bindings.get(name, ())
    if any(not (isinstance(b.node, cst.AnnAssign) and b.node.value is None) for b in declared):
        return None
    return attribute_writes(model, cls, name)


# Per model, (id(class), attribute) -> its writes: the value layer asks for every ``self.<attr>``.
_WRITES: weakref.WeakKeyDictionary[SemanticModel, dict[tuple[int, str], list[cst.BaseExpression | None]]] = (
    weakref.WeakKeyDictionary()
)


def attribute_writes(model: SemanticModel, cls: cst.ClassDef, name: str) -> list[cst.BaseExpression | None]:
    """The values the methods of ``cls`` write to ``self.<name>`` (``self_writes``), memoized."""
    known = _WRITES.setdefault(model, {})
    key = (id(cls), name)
    if key not in known:
        known[key] = [
            write
            for info in model.functions.values()
            if info.class_node is cls and isinstance(info.node, cst.FunctionDef)
            for write in self_writes(model, info.node, name)
        ]
    return known[key]


def self_writes(model: SemanticModel, function: cst.FunctionDef, name: str) -> list[cst.BaseExpression | None]:
    """The values ``function`` (a method) writes to ``self.<name>``; None for a write whose value is
    not a plain assignment's (augmented, a tuple target, a ``for`` target...)."""
    params = positional_params(function)
    if not params:
        return []
    receiver = params[0].name.value
    found: list[cst.BaseExpression | None] = []
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        if (
            isinstance(node, cst.Attribute)
            and node.attr.value == name
            and isinstance(node.value, cst.Name)
            and node.value.value == receiver
            and _is_write(model, node)
        ):
            parent = model.parent(model.parent(node))
            plain = isinstance(parent, cst.Assign) and len(parent.targets) == 1 and parent.targets[0].target is node
            found.append(parent.value if plain else None)  # type: ignore[union-attr]  # ``plain``: parent is an Assign
        stack.extend(child_nodes(node))
    return found


# Where an attribute may be written (a tuple element may be a read too: counted, to stay certain).
_WRITE_PARENTS = (
    cst.AssignTarget,
    cst.AugAssign,
    cst.AnnAssign,
    cst.For,
    cst.WithItem,
    cst.AsName,
    cst.Element,
    cst.StarredElement,
)


def _is_write(model: SemanticModel, node: cst.Attribute) -> bool:
    parent = model.parent(node)
    if isinstance(parent, cst.For):
        return parent.target is node  # ``for layer in self.layers`` reads it
    return isinstance(parent, _WRITE_PARENTS)


def _haiku_transformed(model: SemanticModel, expr: cst.Attribute) -> cst.BaseExpression | None:
    """``fn`` of ``f.apply`` where ``f`` is certainly ``hk.transform(fn)``,
    ``hk.transform_with_state(fn)`` or either under ``hk.without_apply_rng``."""
    if expr.attr.value != "apply":
        return None
    value: cst.CSTNode | None = expr.value
    if isinstance(value, cst.Name):
        bindings, certain = reaching_bindings(model, value)
        value = bindings[0].value if certain and len(bindings) == 1 and bindings[0].kind == "assign" else None
    while isinstance(value, cst.Call) and value.args and not value.args[0].keyword and not value.args[0].star:
        qname = model.qualified_name(value.func)
        if qname in haiku.TRANSFORMS:
            return value.args[0].value
        if qname != haiku.WITHOUT_APPLY_RNG:
            return None
        value = value.args[0].value
    return None
