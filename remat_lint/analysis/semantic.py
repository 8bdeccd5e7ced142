"""A cheap semantic model of one module: scopes, bindings, parents and qualified names.

libcst's ScopeProvider/QualifiedNameProvider cost about 5x a parse on real JAX code, and its visitor
dispatch rebuilds every node. Rules only need to know what a handful of names refer to, so this
module walks the tree once with a plain stack-free recursion over dataclass fields (about 7x
faster than ``CSTVisitor``), records scopes and bindings the way Python defines them, and resolves
qualified names lazily, on demand.

Names are resolved in program order, as Python runs the module: at each use, the bindings that
can reach it. In the scope that owns the name (and in a class body or comprehension it runs
immediately) that is the last binding before the use, joined by the ones before it while that one
is under a condition, a loop or a ``try``, and by later ones in a loop that holds the use. A use
inside a function body runs later, so it sees the scope's final bindings. A binding made through
``global``/``nonlocal`` in a function may happen at any time and joins every use.

Resolution stays conservative: a name resolves only when every binding that reaches it agrees
(imports of the same name, aliases of it); a parameter, a ``for`` target or any other value
resolves to nothing, so rules stay silent.
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import libcst as cst

ScopeKind = Literal["module", "class", "function", "lambda", "comprehension"]
BindingKind = Literal["import", "assign", "def", "class", "param", "other"]

_BUILTINS = frozenset(dir(builtins))
# Statements whose body may run zero times or stop part-way: a binding in them may not happen.
_CONDITIONAL = (cst.If, cst.For, cst.While, cst.Try, cst.TryStar, cst.With, cst.Match)
_LOOPS = (cst.For, cst.While)
_NUMBERS = (cst.Integer, cst.Float)

# Fields that only ever hold whitespace, punctuation or comments: never walked.
_SKIPPED_FIELDS = frozenset(
    {
        "leading_lines",
        "lines_after_decorators",
        "header",
        "footer",
        "lpar",
        "rpar",
        "comma",
        "semicolon",
        "newline",
        "trailing_whitespace",
        "equal",
        "colon",
        "dot",
        "star",
        "whitespace_before",
        "whitespace_after",
        "whitespace_before_colon",
        "whitespace_after_colon",
        "whitespace_after_def",
        "whitespace_after_class",
        "whitespace_before_params",
        "whitespace_after_arg",
        "whitespace_after_star",
        "whitespace_after_star_star",
        "whitespace_after_at",
        "whitespace_after_import",
        "whitespace_after_from",
        "whitespace_before_import",
        "whitespace_after_as",
        "whitespace_before_as",
        "whitespace_after_in",
        "whitespace_before_in",
        "whitespace_after_for",
        "whitespace_before_for",
        "whitespace_after_if",
        "whitespace_before_if",
        "whitespace_after_lambda",
        "whitespace_after_await",
        "whitespace_before_walrus",
        "whitespace_after_walrus",
        "whitespace_before_indicator",
        "whitespace_after_indicator",
    }
)
_FIELD_CACHE: dict[type, tuple[str, ...]] = {}
# A field value's type -> _NODE, _SEQUENCE or _OTHER: ``isinstance`` on CSTNode, an ABC, cost a
# fifth of the semantic model's walk.
_KINDS: dict[type, int] = {}
_OTHER, _NODE, _SEQUENCE = 0, 1, 2


def child_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The syntactic children of ``node`` (whitespace and punctuation excluded), in source order."""
    names = _FIELD_CACHE.get(type(node))
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(node) if f.name not in _SKIPPED_FIELDS)
        _FIELD_CACHE[type(node)] = names
    kinds = _KINDS
    for name in names:
        value = getattr(node, name)
        kind = kinds.get(type(value))
        if kind is None:
            kind = _kind(type(value))
        if kind == _NODE:
            yield value
        elif kind == _SEQUENCE:
            for item in value:
                kind = kinds.get(type(item))
                if (kind if kind is not None else _kind(type(item))) == _NODE:
                    yield item


def _kind(kind: type) -> int:
    found = _KINDS[kind] = (
        _NODE if issubclass(kind, cst.CSTNode) else _SEQUENCE if issubclass(kind, (tuple, list)) else _OTHER
    )
    return found


@dataclass(eq=False)
class Binding:
    name: str
    kind: BindingKind
    node: cst.CSTNode
    qname: str | None = None  # imports: the imported dotted name
    value: cst.BaseExpression | None = None  # single-target assignments (and unpacked elements): the value
    order: int = -1  # position in program order: bindings and uses compare by it
    anytime: bool = False  # made in a function through ``global``/``nonlocal``: may happen at any time
    # The statements of its scope that may skip it (``if``, loops, ``try``, ``with``, ``match``).
    guards: tuple[cst.CSTNode, ...] = ()


@dataclass(eq=False)
class Scope:
    kind: ScopeKind
    node: cst.CSTNode
    parent: Scope | None
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    global_names: set[str] = field(default_factory=set)
    nonlocal_names: set[str] = field(default_factory=set)

    def bind(self, binding: Binding) -> None:
        self.bindings.setdefault(binding.name, []).append(binding)

    def owner_of(self, name: str) -> Scope | None:
        """The scope whose binding of ``name`` a reference in this scope sees (LEGB, classes skipped)."""
        scope: Scope | None = self
        first = True
        while scope is not None:
            if name in scope.global_names:
                return scope.module
            if (first or scope.kind != "class") and name in scope.bindings:
                return scope
            first = False
            scope = scope.parent
        return None

    @property
    def module(self) -> Scope:
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope


@dataclass(eq=False)
class FunctionInfo:
    node: cst.FunctionDef | cst.Lambda
    scope: Scope  # the function's own scope
    outer: Scope  # the scope the def statement is in
    class_node: cst.ClassDef | None  # the class whose body defines it (methods)


class SemanticModel:
    """Scopes, bindings, parents and references of one module, built in one walk."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.module_scope = Scope("module", module, None)
        self.parents: dict[int, cst.CSTNode] = {}
        self.scope_of_name: dict[int, Scope] = {}
        self.name_order: dict[int, int] = {}  # id(name) -> bindings made before it in program order
        self._reaching: dict[int, tuple[list[Binding], bool]] = {}
        self._qnames: dict[int, str | None] = {}
        self.calls: list[cst.Call] = []
        self.functions: dict[int, FunctionInfo] = {}  # id(def) -> info
        self.classes: list[cst.ClassDef] = []
        self.class_scopes: dict[int, Scope] = {}  # id(class) -> the scope of its body
        self.imports: list[cst.Import | cst.ImportFrom] = []
        self.attributes: list[cst.Attribute] = []
        self.subscripts: list[cst.Subscript] = []
        self.names: list[
            cst.Name
        ] = []  # uses and targets (no attribute's ``attr``, def, class, parameter or import name)
        self.strings: list[cst.SimpleString] = []  # every plain string literal (REM008 reads them all)
        self._resolving: set[int] = set()
        _Builder(self).walk_module(module)

    # --- structure -----------------------------------------------------------------------------

    @functools.cached_property
    def called_names(self) -> dict[str, list[cst.Name]]:
        """The calls whose function is a bare name, by that name (``f`` of ``f(x)``), in program
        order: the calls of one name without a walk over every call (a module of N wrapped
        functions asks N times)."""
        index: dict[str, list[cst.Name]] = {}
        for call in self.calls:
            if isinstance(call.func, cst.Name):
                index.setdefault(call.func.value, []).append(call.func)
        return index

    def parent(self, node: cst.CSTNode | None) -> cst.CSTNode | None:  # None: the parent of no node
        return self.parents.get(id(node))

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        current = self.parents.get(id(node))
        while current is not None:
            yield current
            current = self.parents.get(id(current))

    def scope_of(self, node: cst.CSTNode) -> Scope:
        """The scope an expression is evaluated in."""
        name = leftmost_name(node)
        if name is not None and id(name) in self.scope_of_name:
            return self.scope_of_name[id(name)]
        for ancestor in self.ancestors(node):
            info = self.functions.get(id(ancestor))
            if info is not None:
                return info.scope
        return self.module_scope

    def enclosing_function(self, node: cst.CSTNode) -> FunctionInfo | None:
        for ancestor in self.ancestors(node):
            info = self.functions.get(id(ancestor))
            if info is not None:
                return info
        return None

    # --- names ---------------------------------------------------------------------------------

    def bindings_of(self, name: str, scope: Scope) -> list[Binding]:
        owner = scope.owner_of(name)
        return owner.bindings[name] if owner is not None else []

    def reaching_bindings(self, name: cst.Name) -> tuple[list[Binding], bool]:
        """The bindings of ``name`` that can reach this use in program order, and whether the
        name may also be unbound there (then a builtin of that name is what it refers to)."""
        cached = self._reaching.get(id(name))
        if cached is None:
            scope = self.scope_of_name.get(id(name), self.module_scope)
            cached = self._reaching[id(name)] = self._reaching_from(scope, name.value, name)
        return cached

    def _reaching_from(self, scope: Scope, name: str, use: cst.Name) -> tuple[list[Binding], bool]:
        owner = scope.owner_of(name)
        if owner is None:
            return [], True
        order = self.name_order.get(id(use))
        bindings = owner.bindings[name]
        only = bindings[0] if len(bindings) == 1 and not bindings[0].anytime and not bindings[0].guards else None
        if only is not None and (order is None or only.order < order or _runs_later(scope, owner)):
            return [only], False  # the common case (an import, a def): one binding that always happens
        found = [b for b in owner.bindings[name] if b.anytime]
        ordered = [b for b in owner.bindings[name] if not b.anytime]
        if order is None or _runs_later(scope, owner):
            # A function body runs after its scope: it sees the final bindings.
            complete = _walk_back(ordered, found, lambda b: not b.guards)
            return found, not complete
        around = {id(a) for a in self.ancestors(use)} if any(b.guards for b in ordered) else set()
        before = [b for b in ordered if b.order < order]
        complete = _walk_back(before, found, lambda b: all(id(g) in around for g in b.guards))
        # A later binding in a loop that holds the use reaches it on the next iteration, unless the
        # iteration always re-binds the name before the use (``layer = Block(); layer = remat(layer)``).
        rebinding = {
            id(g) for b in before if all(id(g) in around for g in b.guards) for g in b.guards if isinstance(g, _LOOPS)
        }
        found.extend(
            b
            for b in ordered
            if b.order >= order
            and any(isinstance(g, _LOOPS) and id(g) in around and id(g) not in rebinding for g in b.guards)
        )
        if not complete and owner.kind == "class":
            # A class body falls back to the enclosing scope for names it has not bound (yet).
            outer = owner.parent
            while outer is not None and outer.kind == "class":
                outer = outer.parent
            if outer is not None:
                more, maybe_unbound = self._reaching_from(outer, name, use)
                return found + more, maybe_unbound
        return found, not complete

    def bindings_at(self, expr: cst.CSTNode) -> list[Binding] | None:
        """The bindings of a name that reach this use; None when it may also be unbound there."""
        if not isinstance(expr, cst.Name):
            return None
        bindings, maybe_unbound = self.reaching_bindings(expr)
        return None if maybe_unbound and not bindings else bindings

    def qualified_name(self, expr: cst.CSTNode) -> str | None:
        """The dotted name ``expr`` refers to (``jax.checkpoint``), or None when not certain.

        A name resolves when every binding that reaches it (``= None`` fallbacks aside) denotes the
        same thing: an import of it, or an alias bound to a resolvable name or attribute
        (``remat = nn_partitioning.remat``, ``ckpt, vg = jax.checkpoint, jax.value_and_grad``);
        unbound builtins resolve to ``builtins.<name>``; anything else resolves to None.
        """
        if isinstance(expr, cst.Attribute):
            base = self.qualified_name(expr.value)
            return f"{base}.{expr.attr.value}" if base is not None else None
        if not isinstance(expr, cst.Name):
            return None
        if id(expr) in self._qnames:
            return self._qnames[id(expr)]
        bindings, maybe_unbound = self.reaching_bindings(expr)
        if maybe_unbound and expr.value in _BUILTINS:
            return None if bindings else f"builtins.{expr.value}"
        # ``except ImportError: nn = None``: None has no attributes and cannot be called, so where
        # the name denotes an API at all, it is the import.
        meaningful = [b for b in bindings if not (b.kind == "assign" and _is_none(b.value))]
        qnames = {self._binding_qname(b) for b in meaningful}
        qname = qnames.pop() if len(qnames) == 1 else None
        if not self._resolving:  # inside an alias chain a cycle may have cut the answer short
            self._qnames[id(expr)] = qname
        return qname

    def _binding_qname(self, binding: Binding) -> str | None:
        if binding.kind == "import":
            return binding.qname
        value = binding.value
        if binding.kind != "assign" or not isinstance(value, (cst.Name, cst.Attribute)) or id(value) in self._resolving:
            return None
        self._resolving.add(id(value))
        try:
            return self.qualified_name(value)
        finally:
            self._resolving.discard(id(value))

    def assigned_value(self, expr: cst.CSTNode) -> cst.BaseExpression | None:
        """The value of the one plain assignment that reaches a name's use, else None."""
        binding = self.single_binding(expr)
        return binding.value if binding is not None and binding.kind == "assign" else None

    def single_binding(self, expr: cst.CSTNode) -> Binding | None:
        """The one binding that reaches a name's use, else None."""
        bindings = self.bindings_at(expr)
        return bindings[0] if bindings is not None and len(bindings) == 1 else None

    def definition(self, expr: cst.CSTNode) -> cst.FunctionDef | cst.ClassDef | cst.Lambda | None:
        """The def, class or lambda an expression certainly denotes (a lambda itself, a name bound
        once by ``def``/``class``/``name = lambda ...``), else None."""
        if isinstance(expr, cst.Lambda):
            return expr
        binding = self.single_binding(expr)
        if binding is None:
            return None
        if binding.kind in ("def", "class"):
            return binding.node  # type: ignore[return-value]  # a def or class binding's node is its FunctionDef or ClassDef
        if binding.kind == "assign" and isinstance(binding.value, cst.Lambda):
            return binding.value
        return None


def _runs_later(scope: Scope, owner: Scope) -> bool:
    """A use in ``scope`` runs after ``owner``'s code: a function or lambda lies between them."""
    current: Scope | None = scope
    while current is not None and current is not owner:
        if current.kind in ("function", "lambda"):
            return True
        current = current.parent
    return False


def _walk_back(bindings: list[Binding], found: list[Binding], certain: Callable[[Binding], bool]) -> bool:
    """Add bindings from the last one back, up to the first that ``certain`` says always happens;
    whether one did."""
    for binding in reversed(bindings):
        found.append(binding)
        if certain(binding):
            return True
    return False


def is_step(binding: Binding, name: str) -> bool:
    """``binding`` re-binds ``name`` to a step of itself: ``name = name <op> <number>`` (either
    side) or ``name <op>= <number>`` (a traced number stays traced)."""
    node = binding.node
    if isinstance(node, cst.AugAssign):
        return isinstance(node.target, cst.Name) and node.target.value == name and isinstance(node.value, _NUMBERS)
    value = binding.value if binding.kind == "assign" else None
    if not isinstance(value, cst.BinaryOperation):
        return False
    operands = (value.left, value.right)
    return any(isinstance(o, cst.Name) and o.value == name for o in operands) and any(
        isinstance(o, _NUMBERS) for o in operands
    )


def _is_none(value: cst.BaseExpression | None) -> bool:
    return isinstance(value, cst.Name) and value.value == "None"


def leftmost_name(node: cst.CSTNode) -> cst.Name | None:
    while True:
        if isinstance(node, cst.Name):
            return node
        if isinstance(node, cst.Attribute):
            node = node.value
        elif isinstance(node, (cst.Call, cst.Subscript)):
            node = node.func if isinstance(node, cst.Call) else node.value
        else:
            return None


def dotted_import_name(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name):
        return node.value
    assert isinstance(node, cst.Attribute)
    return f"{dotted_import_name(node.value)}.{node.attr.value}"


class _Builder:
    """Fills a SemanticModel in one recursive walk."""

    def __init__(self, model: SemanticModel) -> None:
        self.m = model
        self.scope = model.module_scope
        self.class_stack: list[cst.ClassDef | None] = [None]
        self.order = 0  # bindings made so far: the program-order position of what is walked next
        self.guards: tuple[cst.CSTNode, ...] = ()  # the enclosing statements of this scope that may skip

    def walk_module(self, module: cst.Module) -> None:
        for stmt in module.body:
            self.visit(stmt, module)

    def visit(self, node: cst.CSTNode, parent: cst.CSTNode) -> None:
        self.m.parents[id(node)] = parent
        handler = _HANDLERS.get(type(node))
        if handler is not None:
            handler(self, node)
        else:
            self.visit_children(node)

    def visit_children(self, node: cst.CSTNode) -> None:
        for child in child_nodes(node):
            self.visit(child, node)

    def bind(self, name: str, kind: BindingKind, node: cst.CSTNode, **kw: object) -> None:
        scope = self.scope
        if name in scope.global_names and scope.parent is not None:
            # Made whenever the function runs: it may reach any use of the global.
            scope.module.bind(Binding(name, kind, node, order=self.order, anytime=True, **kw))  # type: ignore[arg-type]  # ``kw``: Binding's optional fields, as the callers name them
        elif name in scope.nonlocal_names:
            # Rebinding an enclosing function's variable: it resolves to nothing there any more.
            outer = scope.parent
            while outer is not None and outer.kind != "module":
                if outer.kind != "class":
                    outer.bind(Binding(name, "other", node, order=self.order, anytime=True))
                outer = outer.parent
        else:
            scope.bind(Binding(name, kind, node, order=self.order, guards=self.guards, **kw))  # type: ignore[arg-type]  # ``kw``: Binding's optional fields, as the callers name them
        self.order += 1

    def bind_target(
        self, target: cst.BaseExpression, node: cst.CSTNode, value: cst.BaseExpression | None = None
    ) -> None:
        """Bind the names of an assignment target; ``value``, when known, is what ``target`` gets
        (``ckpt, vg = jax.checkpoint, jax.value_and_grad`` binds each name to its element)."""
        if isinstance(target, cst.Name):
            if value is not None:
                self.bind(target.value, "assign", node, value=value)
            else:
                self.bind(target.value, "other", node)
        elif isinstance(target, (cst.Tuple, cst.List)):
            values = _unpacked(target, value)
            for i, element in enumerate(target.elements):
                self.bind_target(element.value, node, values[i] if values is not None else None)
        elif isinstance(target, cst.StarredElement):
            self.bind_target(target.value, node)

    # --- handlers ------------------------------------------------------------------------------

    def on_name(self, node: cst.Name) -> None:
        self.m.names.append(node)
        self.m.scope_of_name[id(node)] = self.scope
        self.m.name_order[id(node)] = self.order

    def on_call(self, node: cst.Call) -> None:
        self.m.calls.append(node)
        self.visit_children(node)

    def on_attribute(self, node: cst.Attribute) -> None:
        self.m.attributes.append(node)
        # The attribute name is not a reference of its own: only walk the value.
        self.visit(node.value, node)

    def on_subscript(self, node: cst.Subscript) -> None:
        self.m.subscripts.append(node)
        self.visit_children(node)

    def on_simple_string(self, node: cst.SimpleString) -> None:
        self.m.strings.append(node)

    def on_import(self, node: cst.Import) -> None:
        self.m.imports.append(node)
        for alias in node.names:
            full = dotted_import_name(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.bind(alias.asname.name.value, "import", node, qname=full)
            else:
                top = full.split(".", 1)[0]
                self.bind(top, "import", node, qname=top)

    def on_import_from(self, node: cst.ImportFrom) -> None:
        self.m.imports.append(node)
        if isinstance(node.names, cst.ImportStar):
            return
        base = dotted_import_name(node.module) if node.module is not None else ""
        if node.relative:
            base = "." * len(node.relative) + base
        for alias in node.names:
            imported = dotted_import_name(alias.name)
            local = imported
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            joined = base if not base or base.endswith(".") else f"{base}."  # ``from . import x``: ``.x``
            self.bind(local, "import", node, qname=f"{joined}{imported}")

    def on_assign(self, node: cst.Assign) -> None:
        self.visit(node.value, node)
        for target in node.targets:
            self.visit(target, node)
            self.bind_target(target.target, node, node.value if len(node.targets) == 1 else None)

    def on_ann_assign(self, node: cst.AnnAssign) -> None:
        self.visit_children(node)
        if isinstance(node.target, cst.Name) and node.value is not None:
            self.bind(node.target.value, "assign", node, value=node.value)
        else:
            self.bind_target(node.target, node)

    def on_aug_assign(self, node: cst.AugAssign) -> None:
        self.visit_children(node)
        self.bind_target(node.target, node)

    def on_for(self, node: cst.For) -> None:
        self.visit(node.iter, node)
        outer, self.guards = self.guards, (*self.guards, node)
        self.bind_target(node.target, node)  # before the body runs
        self.visit(node.target, node)
        self.visit(node.body, node)
        if node.orelse is not None:
            self.visit(node.orelse, node)
        self.guards = outer

    def on_conditional(self, node: cst.CSTNode) -> None:
        outer, self.guards = self.guards, (*self.guards, node)
        self.visit_children(node)
        self.guards = outer

    def in_new_scope(self, scope: Scope, node: cst.CSTNode) -> None:
        """Walk ``node`` as the body of ``scope``: its bindings are guarded only by its own statements."""
        outer, outer_guards = self.scope, self.guards
        self.scope, self.guards = scope, ()
        self.visit(node, scope.node)
        self.scope, self.guards = outer, outer_guards

    def on_as_name(self, node: cst.AsName) -> None:
        self.visit_children(node)
        self.bind_target(node.name, node)

    def on_named_expr(self, node: cst.NamedExpr) -> None:
        self.visit_children(node)
        if isinstance(node.target, cst.Name):
            # A walrus in a comprehension binds in the enclosing function.
            scope = self.scope
            while scope.kind == "comprehension" and scope.parent is not None:
                scope = scope.parent
            scope.bind(Binding(node.target.value, "other", node, order=self.order))
            self.order += 1

    def on_global(self, node: cst.Global) -> None:
        for item in node.names:
            self.scope.global_names.add(item.name.value)

    def on_nonlocal(self, node: cst.Nonlocal) -> None:
        for item in node.names:
            self.scope.nonlocal_names.add(item.name.value)

    def on_match_as(self, node: cst.MatchAs) -> None:
        self.visit_children(node)
        if node.name is not None:
            self.bind(node.name.value, "other", node)

    def on_function(self, node: cst.FunctionDef) -> None:
        for decorator in node.decorators:
            self.visit(decorator, node)
        if node.returns is not None:
            self.visit(node.returns, node)
        self.bind(node.name.value, "def", node)
        outer = self.scope
        inner = Scope("function", node, outer)
        self.m.functions[id(node)] = FunctionInfo(node, inner, outer, self.class_stack[-1])
        self._visit_params(node.params, node, inner)
        self.class_stack.append(None)
        self.in_new_scope(inner, node.body)
        self.class_stack.pop()

    def on_lambda(self, node: cst.Lambda) -> None:
        outer = self.scope
        inner = Scope("lambda", node, outer)
        self.m.functions[id(node)] = FunctionInfo(node, inner, outer, None)
        self._visit_params(node.params, node, inner)
        self.in_new_scope(inner, node.body)

    def _visit_params(self, params: cst.Parameters, owner: cst.CSTNode, inner: Scope) -> None:
        self.m.parents[id(params)] = owner
        for param in _all_params(params):
            self.m.parents[id(param)] = params
            if param.default is not None:
                self.visit(param.default, param)
            if param.annotation is not None:
                self.visit(param.annotation, param)
            inner.bind(Binding(param.name.value, "param", param, order=self.order))
            self.order += 1

    def on_class(self, node: cst.ClassDef) -> None:
        for decorator in node.decorators:
            self.visit(decorator, node)
        for arg in (*node.bases, *node.keywords):
            self.visit(arg, node)
        self.m.classes.append(node)
        scope = self.m.class_scopes[id(node)] = Scope("class", node, self.scope)
        self.class_stack.append(node)
        self.in_new_scope(scope, node.body)
        self.class_stack.pop()
        self.bind(node.name.value, "class", node)  # once its body has run

    def on_comprehension(self, node: cst.CSTNode) -> None:
        outer, outer_guards = self.scope, self.guards
        self.scope, self.guards = Scope("comprehension", node, outer), ()
        # The ``for`` clauses run before the element: their targets are bound when it is computed.
        for_in = getattr(node, "for_in", None)
        if isinstance(for_in, cst.CompFor):
            self.visit(for_in, node)
        for child in child_nodes(node):
            if child is not for_in:
                self.visit(child, node)
        self.scope, self.guards = outer, outer_guards

    def on_comp_for(self, node: cst.CompFor) -> None:
        self.visit(node.iter, node)
        self.bind_target(node.target, node)
        self.visit(node.target, node)
        for cond in node.ifs:
            self.visit(cond, node)
        if node.inner_for_in is not None:
            self.visit(node.inner_for_in, node)


def iterated(binding: Binding) -> cst.BaseExpression | None:
    """The collection a ``for`` loop or comprehension iterates when ``binding`` is its plain
    target (``for block in blocks``, ``[... for p in NAMES]``; not ``for a, b in ...``)."""
    loop = binding.node
    if isinstance(loop, (cst.For, cst.CompFor)) and isinstance(loop.target, cst.Name):
        return loop.iter if loop.target.value == binding.name else None
    return None


def _unpacked(target: cst.Tuple | cst.List, value: cst.BaseExpression | None) -> list[cst.BaseExpression] | None:
    """The element of a tuple or list literal each element of ``target`` gets, when they pair up."""
    if not isinstance(value, (cst.Tuple, cst.List)) or len(value.elements) != len(target.elements):
        return None
    if any(isinstance(e, cst.StarredElement) for e in (*value.elements, *target.elements)):
        return None
    return [e.value for e in value.elements]


def _all_params(params: cst.Parameters) -> Iterator[cst.Param]:
    yield from params.posonly_params
    yield from params.params
    if isinstance(params.star_arg, cst.Param):
        yield params.star_arg
    yield from params.kwonly_params
    if params.star_kwarg is not None:
        yield params.star_kwarg


# Each handler takes the node class it is registered for.
_HANDLERS: dict[type[cst.CSTNode], Callable[[_Builder, Any], None]] = {
    cst.Name: _Builder.on_name,
    cst.Call: _Builder.on_call,
    cst.Attribute: _Builder.on_attribute,
    cst.Subscript: _Builder.on_subscript,
    cst.SimpleString: _Builder.on_simple_string,
    cst.Import: _Builder.on_import,
    cst.ImportFrom: _Builder.on_import_from,
    cst.Assign: _Builder.on_assign,
    cst.AnnAssign: _Builder.on_ann_assign,
    cst.AugAssign: _Builder.on_aug_assign,
    cst.For: _Builder.on_for,
    cst.AsName: _Builder.on_as_name,
    cst.NamedExpr: _Builder.on_named_expr,
    cst.Global: _Builder.on_global,
    cst.Nonlocal: _Builder.on_nonlocal,
    cst.MatchAs: _Builder.on_match_as,
    cst.FunctionDef: _Builder.on_function,
    cst.Lambda: _Builder.on_lambda,
    cst.ClassDef: _Builder.on_class,
    cst.If: _Builder.on_conditional,
    cst.While: _Builder.on_conditional,
    cst.Try: _Builder.on_conditional,
    cst.TryStar: _Builder.on_conditional,
    cst.With: _Builder.on_conditional,
    cst.Match: _Builder.on_conditional,
    cst.ListComp: _Builder.on_comprehension,
    cst.SetComp: _Builder.on_comprehension,
    cst.DictComp: _Builder.on_comprehension,
    cst.GeneratorExp: _Builder.on_comprehension,
    cst.CompFor: _Builder.on_comp_for,
}
