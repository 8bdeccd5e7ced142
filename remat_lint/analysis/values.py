"""What an expression can hold: the one value layer that rules judging a policy, a name list or a
static argument share.

``Values.possible(expr)`` gives every value ``expr`` can hold, as plain data (``Value``), or None
when any of them is unknown. It follows:

- literals (``"dots_saveable"``, ``True``, ``2``, ``(1, 2)``) and strings built from strings
  (``+``, ``%``, ``.format()``, f-strings), conditional expressions (either branch);
- names, through every binding that reaches the use (``semantic.SemanticModel``, program order);
- policies and factories of ``jax.checkpoint_policies`` by qualified name, a factory's call, and
  ``getattr(jax.checkpoint_policies, name)``;
- dict literals bound to a name that is never mutated: ``POLICIES["dots"]``, ``POLICIES[key]``
  (any entry), ``POLICIES.get(key, default)``; tuple and list literals indexed by an integer;
- loop and comprehension variables: each element of the tuple or list literal iterated;
- enum members' values (``Mode.FULL.value``, ``Mode["FULL"].value``: ``enums.member_value``);
- the return values of a same-module function (every ``return`` resolvable; no decorator but
  ``functools.cache``/``lru_cache``, which return what the function does); a returned
  ``a if flag else b`` on a parameter the call passes a value of known truth: that branch;
- wrappers that return their argument's behaviour (``apis.SAME_BEHAVIOUR``: ``named_call``);
- Module classes and instances (kinds ``module_class``, ``module_instance``) of Flax linen, NNX,
  Haiku and Equinox: a framework's layer or a class of this module deriving from a Module
  (``module_classes.module_family``), ``functools.partial(Block, ...)`` of one, a Flax remat of a
  linen class; an instance is a call of a class, and ``block.__class__`` / ``type(block)`` is the
  class of an instance; ``self.<attr>`` holds any Module the class's methods assign to it, when
  each value assigned is one (``self.mlp = nn.Dense(4)`` in ``setup`` or ``__init__``); a loop over a
  comprehension's elements (``[Block() for _ in range(n)]``) gets what its element can be;
- configuration (``config_values.ConfigSources``): config classes' fields, ``ml_collections``
  ConfigDicts, the environment, absl flags and argparse options.

Imported names: a ``Values`` built with ``imported`` asks it for names bound by an import
(``from config import POLICY`` calls ``imported("config.POLICY", False)``), attributes of an
imported module or class (``constants.POLICY``, ``Config.remat_policy``) and fields of a config
object whose class is imported: built without arguments (``cfg = Config()``: the default) or a
parameter annotated with it (``cfg: Config``: ``imported("config.Config.remat_policy", True)``,
any instance). ``deferred`` answers with placeholders (kinds ``imported``, ``imported_field``)
that the project phase resolves from the other modules' summaries (``project.model.Project``).
Without a callback, imported names are unknown unless they name a policy. A file's rules share
one ``Values`` (``LintContext.values``, no callback) and its ``deferred_imports`` twin, so that
each expression is evaluated once per configuration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import cached_property

import libcst as cst

from remat_lint.analysis.bodies import method, receiver_class
from remat_lint.analysis.callables import instance_attribute, instance_writes
from remat_lint.analysis.config_values import ENVIRONMENT_GETTERS, ConfigSources
from remat_lint.analysis.enums import member_value
from remat_lint.analysis.module_classes import module_family
from remat_lint.analysis.semantic import SemanticModel, child_nodes, iterated
from remat_lint.analysis.value import (
    MAX_DEPTH,
    Kind,
    Possible,
    Value,
    evaluated,
    function_returns,
    literal_value,
    union,
)
from remat_lint.apis import MODULE_FAMILIES, PARTIAL, SAME_BEHAVIOUR, is_policy_namespace, policy_info, remat_api

__all__ = ["Possible", "Value", "Values", "deferred", "function_returns"]

ImportedValues = Callable[[str, bool], "tuple[Value, ...] | None"]  # (dotted name, any instance's field)

_STR_METHODS = frozenset({"format", "lower", "upper", "strip", "replace", "removesuffix", "removeprefix"})
# Methods that change a dict or list literal bound to a name in place: its entries are unknown.
_MUTATORS = frozenset(
    {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "append", "extend", "insert", "remove"}
)
# Decorators after which a function returns what its body does (they only memoize).
_CACHES = frozenset({"functools.cache", "functools.lru_cache"})
_MODULE_KINDS = ("module_class", "module_instance")
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp)


class Values:
    """Possible values of expressions of one module (cached per node)."""

    def __init__(self, model: SemanticModel, imported: ImportedValues | None = None) -> None:
        self.model = model
        self.imported = imported
        self._cache: dict[int, Possible | None] = {}
        self._active: set[int] = set()
        self._subscript_writes: set[str] | None = None
        self.config = ConfigSources(self)

    @cached_property
    def deferred_imports(self) -> Values:
        """This module's evaluator that answers imported names with placeholders for the project
        phase (``deferred``), built once so that its node cache is shared too."""
        return self if self.imported is deferred else Values(self.model, imported=deferred)

    def possible(self, expr: cst.CSTNode, depth: int = 0) -> Possible | None:
        """Every value ``expr`` can hold, or None when one of them is unknown."""
        key = id(expr)
        if key in self._cache:
            return self._cache[key]
        if depth > MAX_DEPTH or key in self._active:
            return None
        self._active.add(key)
        try:
            found = self._possible(expr, depth + 1)
        finally:
            self._active.discard(key)
        self._cache[key] = found
        return found

    def elements(self, expr: cst.BaseExpression) -> Possible | None:
        """The items of the one tuple, list or set literal ``expr`` certainly holds (a name bound
        to one that nothing mutates); None for anything else or an item that is unknown."""
        sequences = self._sequences(expr, 0)
        return sequences[0] if sequences is not None and len(sequences) == 1 else None

    def entries(self, table: cst.BaseExpression) -> list[tuple[Value | None, cst.BaseExpression]] | None:
        """The (key, value) pairs of the dict literal or ``dict(k=v)`` call ``table`` certainly
        is, through names bound once that nothing mutates; None for anything else."""
        return self._entries(table, 0)

    def single(self, expr: cst.CSTNode, depth: int = 0) -> Value | None:
        """The value ``expr`` certainly holds, when there is exactly one."""
        found = self.possible(expr, depth)
        return found[0] if found is not None and len(set(found)) == 1 else None

    # --- expressions ---------------------------------------------------------------------------

    def _possible(self, expr: cst.CSTNode, depth: int) -> Possible | None:
        literal = literal_value(expr)
        if literal is not None:
            return (literal,)
        if isinstance(expr, cst.Name):
            return self._name(expr, depth)
        if isinstance(expr, (cst.ConcatenatedString, cst.FormattedString)):
            return (Value("str", evaluated(expr), node=expr),)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
            inner = self.single(expr.expression, depth)
            if inner is not None and inner.kind in ("int", "float") and isinstance(inner.literal, (int, float)):
                return (Value(inner.kind, -inner.literal, node=expr),)
            return None
        if isinstance(expr, cst.BinaryOperation):
            return self._string_operation(expr, depth)
        if isinstance(expr, cst.IfExp):
            return union(self.possible(expr.body, depth), self.possible(expr.orelse, depth))
        if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
            return (self._sequence(expr, depth),)
        if isinstance(expr, cst.Lambda):
            return (Value("callable", node=expr),)
        if isinstance(expr, cst.Attribute):
            return self._attribute(expr, depth)
        if isinstance(expr, cst.Subscript):
            return self._subscript(expr, depth)
        if isinstance(expr, cst.Call):
            return self._call(expr, depth)
        return None

    def _name(self, name: cst.Name, depth: int) -> Possible | None:
        bindings = self.model.bindings_at(name)
        if not bindings:
            return None
        found: Possible = ()
        for binding in bindings:
            if binding.kind == "assign" and binding.value is not None:
                values = self.possible(binding.value, depth)
            elif binding.kind == "import":
                values = self._imported(binding.qname)
            elif binding.kind == "def":
                values = (Value("callable", node=binding.node),)
            elif binding.kind == "class" and isinstance(binding.node, cst.ClassDef):
                values = self._class(binding.node)
            elif (collection := iterated(binding)) is not None:
                values = self._elements(collection, depth)
            else:
                values = None
            if values is None:
                return None
            found = union(found, values)  # type: ignore[assignment]  # the union of two known sets is known
        return found

    def _imported(self, qname: str | None) -> Possible | None:
        if qname is None:
            return None
        policy = _policy(qname) or _framework_class(qname)
        if policy is not None:
            return (policy,)
        return self.imported(qname, False) if self.imported is not None else None

    def _class(self, cls: cst.ClassDef) -> Possible | None:
        """A class of this module: a Module class when it derives from one; otherwise unknown."""
        family = module_family(self.model, cls)
        if family is None:
            return None
        qname = self.model.qualified_name(cls.name) or cls.name.value
        return (Value("module_class", qname=qname, node=cls, framework=family, definition=cls),)

    def _string_operation(self, expr: cst.BinaryOperation, depth: int) -> Possible | None:
        left = self.possible(expr.left, depth)
        if left is None or any(v.kind != "str" for v in left):
            return None
        if isinstance(expr.operator, cst.Modulo):
            return (Value("str", node=expr),)
        if not isinstance(expr.operator, cst.Add):
            return None
        right = self.possible(expr.right, depth)
        if right is None or any(v.kind != "str" for v in right):
            return None
        if (
            len(left) == 1
            and len(right) == 1
            and isinstance(left[0].literal, str)
            and isinstance(right[0].literal, str)
        ):
            return (Value("str", left[0].literal + right[0].literal, node=expr),)
        return (Value("str", node=expr),)

    def _sequence(self, expr: cst.Tuple | cst.List | cst.Set, depth: int) -> Value:
        kind: Kind = "tuple" if isinstance(expr, cst.Tuple) else "set" if isinstance(expr, cst.Set) else "list"
        items = []
        for element in expr.elements:
            value = None if isinstance(element, cst.StarredElement) else self.single(element.value, depth)
            if value is None:
                return Value(kind, node=expr)
            items.append(value)
        return Value(kind, items=tuple(items), node=expr)

    def _attribute(self, expr: cst.Attribute, depth: int) -> Possible | None:
        qname = self.model.qualified_name(expr)
        policy = _policy(qname) or _framework_class(qname)
        if policy is not None:
            return (policy,)
        if expr.attr.value == "__class__":
            return _classes_of(self.possible(expr.value, depth))
        member = member_value(self.model, expr)
        if member is not None:
            return self.possible(member, depth)
        return self.config.attribute(expr, depth) or self._module_attribute(expr, depth) or self._imported_field(expr)

    def _module_attribute(self, expr: cst.Attribute, depth: int) -> Possible | None:
        """``self.<attr>`` that the class's methods assign, when every value assigned is a Module
        (``if ...: self.mlp = nn.Dense(4) else: self.mlp = nn.Dense(8)`` in ``setup``: either);
        other values of instance attributes are left to the configuration sources."""
        cls = receiver_class(self.model, expr.value)
        written = self._instance_writes(cls, expr.attr.value) if cls is not None else None
        found: Possible | None = () if written else None
        for value in written or ():
            found = union(found, self.possible(value, depth) if value is not None else None)
        return found if found and all(v.kind in _MODULE_KINDS for v in found) else None

    def _instance_writes(self, cls: cst.ClassDef, name: str, depth: int = 0) -> list[cst.BaseExpression | None] | None:
        """What the methods of ``cls`` assign to ``self.<name>``, or (when ``cls`` neither declares
        nor writes it) what those of its one local base class that does assign (``setup``
        inherited); None when a base is neither a class of this module nor a framework's Module."""
        written = instance_writes(self.model, cls, name)
        if written or depth > MAX_DEPTH:
            return written or None
        if written is None or self.model.class_scopes[id(cls)].bindings.get(name):
            return None  # given a value or declared in the class body
        found: list[list[cst.BaseExpression | None]] = []
        for base in cls.bases:
            definition = self.model.definition(base.value)
            if isinstance(definition, cst.ClassDef):
                inherited = self._instance_writes(definition, name, depth + 1)
                found += [inherited] if inherited else []
            elif self.model.qualified_name(base.value) not in MODULE_FAMILIES:
                return None
        return found[0] if len(found) == 1 else None

    def _imported_field(self, expr: cst.Attribute) -> Possible | None:
        """Left to ``imported``: ``constants.POLICY`` or ``Config.field`` of an imported module or
        class, ``cfg.field`` for ``cfg = Config()`` of an imported class (the field's default; no
        argument that may set it) or a parameter ``cfg: Config`` (any instance's field)."""
        field = expr.attr.value
        if self.imported is None or self.config.field_written(field):
            return None
        owner = self._import_name(expr.value)
        if owner is not None:
            return self.imported(f"{owner}.{field}", False)
        binding = self.model.single_binding(expr.value) if isinstance(expr.value, cst.Name) else None
        built = expr.value if binding is None else binding.value if binding.kind == "assign" else None
        if isinstance(built, cst.Call) and all(a.keyword is not None and a.keyword.value != field for a in built.args):
            cls, instance = self._import_name(built.func), False  # ``Config()``: the default
        elif (
            binding is not None
            and binding.kind == "param"
            and isinstance(binding.node, cst.Param)
            and binding.node.annotation
        ):
            cls, instance = self._import_name(binding.node.annotation.annotation), True
        else:
            return None
        return self.imported(f"{cls}.{field}", instance) if cls is not None else None

    def _import_name(self, expr: cst.BaseExpression) -> str | None:
        """The dotted name an imported module, class or attribute of one is imported as."""
        root = expr
        while isinstance(root, cst.Attribute):
            root = root.value
        binding = self.model.single_binding(root) if isinstance(root, cst.Name) else None
        return self.model.qualified_name(expr) if binding is not None and binding.kind == "import" else None

    def _subscript(self, expr: cst.Subscript, depth: int) -> Possible | None:
        if len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Index):
            return None
        key = expr.slice[0].slice.value
        return (
            self.config.environment_item(expr)
            or self._item(expr.value, key, depth)
            or self._lookup(expr.value, key, None, depth, getter=False)
        )

    def _call(self, call: cst.Call, depth: int) -> Possible | None:
        qname = self.model.qualified_name(call.func)
        info = policy_info(qname)
        if info is not None and info.kind == "factory":
            return (Value("policy", qname=qname, node=call),)
        if qname == "builtins.getattr" and len(call.args) >= 2:
            if is_policy_namespace(self.model.qualified_name(call.args[0].value)):
                return (Value("policy", node=call),)
            name = literal_value(call.args[1].value)
            if (
                len(call.args) == 2
                and name is not None
                and isinstance(name.literal, str)
                and name.literal.isidentifier()
            ):
                # ``getattr(cfg, "remat_policy")`` reads what ``cfg.remat_policy`` does
                return self._attribute(cst.Attribute(value=call.args[0].value, attr=cst.Name(name.literal)), depth)
            return None
        if qname in ENVIRONMENT_GETTERS:
            return self.config.environment(call, qname, depth)
        if qname in SAME_BEHAVIOUR and call.args and call.args[0].keyword is None and not call.args[0].star:
            return self.possible(call.args[0].value, depth)
        table = self._get(call, depth)  # before ``_module_call``: ``POLICIES.get`` of an imported table
        if table is not None:
            return table
        module = self._module_call(call, qname, depth)
        if module is not None:
            return module
        if qname == "builtins.str":
            return (Value("str", node=call),)
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in _STR_METHODS:
            receiver = self.possible(func.value, depth)
            if receiver is not None and all(v.kind == "str" for v in receiver):
                return (Value("str", node=call),)
        if isinstance(func, cst.Attribute) and func.attr.value == "get" and 1 <= len(call.args) <= 2:
            return None  # ``table.get`` of no table
        return self._returns(call, depth)

    def _get(self, call: cst.Call, depth: int) -> Possible | None:
        """``table.get(key, default)`` of a dict literal (or a table another module defines)."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "get" and 1 <= len(call.args) <= 2):
            return None
        if any(a.keyword is not None or a.star for a in call.args):
            return None
        default = call.args[1].value if len(call.args) == 2 else None
        return self._lookup(func.value, call.args[0].value, default, depth, getter=True)

    def _module_call(self, call: cst.Call, qname: str | None, depth: int) -> Possible | None:
        """A Module class or instance that ``call`` gives: ``type(block)``, ``partial(Block, ...)``,
        a Flax remat of a linen class (a class still), an instance of a class. A call of a name
        imported from another module of the project, when imported names are deferred, is an
        instance that only the project phase can confirm (framework None)."""
        first = call.args[0] if call.args and call.args[0].keyword is None and not call.args[0].star else None
        if qname == "builtins.type" and first is not None and len(call.args) == 1:
            return _classes_of(self.possible(first.value, depth))
        api = remat_api(qname)
        if first is not None and (qname in PARTIAL or (api is not None and api.family == "flax")):
            classes = self.possible(first.value, depth)
            lifted = qname in PARTIAL or all(v.framework in ("flax", None) for v in classes or ())
            if classes and lifted and all(v.kind == "module_class" for v in classes):
                return tuple(v.sourced(qname or "") for v in classes)
            return None
        callee = self.possible(call.func, depth) if isinstance(call.func, (cst.Name, cst.Attribute, cst.Call)) else None
        if callee and all(v.kind == "module_class" for v in callee):
            return tuple(replace(v, kind="module_instance", node=call, via=None) for v in callee)
        if callee and len(callee) == 1 and callee[0].kind == "imported":
            return (Value("module_instance", qname=callee[0].qname, node=call),)
        return None

    def _lookup(
        self,
        table: cst.BaseExpression,
        key: cst.BaseExpression,
        default: cst.BaseExpression | None,
        depth: int,
        getter: bool,
    ) -> Possible | None:
        """``table[key]`` or (``getter``) ``table.get(key, default)`` of a dict literal."""
        entries = self._entries(table, depth)
        if entries is None:
            return self._imported_lookup(table, key, default, depth, getter)
        wanted = self.single(key, depth)
        if wanted is not None and wanted.literal is not None and all(k is not None for k, _ in entries):
            chosen = [value for k, value in entries if k is not None and k.literal == wanted.literal]
            may_miss = not chosen
        else:
            chosen = [value for _, value in entries]  # the key is unknown: any entry
            may_miss = True
        found: Possible | None = ()
        if may_miss and getter:
            found = self.possible(default, depth) if default is not None else (Value("none"),)
        elif not chosen:
            return None  # ``table[key]`` raises KeyError
        for value in chosen:
            found = union(found, self.possible(value, depth))
        return found

    def _imported_lookup(
        self,
        table: cst.BaseExpression,
        key: cst.BaseExpression,
        default: cst.BaseExpression | None,
        depth: int,
        getter: bool,
    ) -> Possible | None:
        """Left to the project (with ``imported``): an entry of a table imported from another
        module (``from .config import POLICIES``; ``literal``: the key, None for any entry), and
        for ``.get`` the default too (whether the key may miss is the project's to tell)."""
        binding = self.model.single_binding(table) if isinstance(table, cst.Name) else None
        if self.imported is None or binding is None or binding.kind != "import" or self.mutated(table.value):  # type: ignore[attr-defined]  # a binding: a Name
            return None
        wanted = self.single(key, depth)
        literal = wanted.literal if wanted is not None and wanted.kind in ("str", "int") else None
        found: Possible | None = (Value("imported_item", literal=literal, qname=binding.qname),)
        if getter:
            found = union(found, self.possible(default, depth) if default is not None else (Value("none"),))
        return found

    def _entries(self, table: cst.BaseExpression, depth: int) -> list[tuple[Value | None, cst.BaseExpression]] | None:
        """The (key, value) pairs of a dict literal or ``dict(k=v)`` that ``table`` is, or that a
        name bound once and never mutated holds; None for anything else (``**other`` in it too)."""
        for _ in range(MAX_DEPTH):  # ``POLICIES = _TABLE``: a name bound once to another
            if not isinstance(table, cst.Name):
                break
            if self.mutated(table.value):
                return None
            table = self.model.assigned_value(table)  # type: ignore[assignment]  # None falls through the isinstance tests below to ``return None``
        entries = [e for e in table.elements if isinstance(e, cst.DictElement)] if isinstance(table, cst.Dict) else []
        if isinstance(table, cst.Dict) and len(entries) == len(table.elements):  # no ``**other``
            return [(self.single(e.key, depth), e.value) for e in entries]
        if (
            isinstance(table, cst.Call)
            and self.model.qualified_name(table.func) == "builtins.dict"
            and all(a.keyword is not None for a in table.args)
        ):
            return [(Value("str", a.keyword.value), a.value) for a in table.args]  # type: ignore[union-attr]  # all() above: every argument has a keyword
        return None

    def mutated(self, name: str) -> bool:
        """A name that some statement of the module changes in place (``D[k] = v``, ``D.update``)."""
        for attribute in self.model.attributes:
            if (
                isinstance(attribute.value, cst.Name)
                and attribute.value.value == name
                and attribute.attr.value in _MUTATORS
            ):
                return True
        if self._subscript_writes is None:
            self._subscript_writes = _subscript_writes(self.model.module)
        return name in self._subscript_writes

    def _returns(self, call: cst.Call, depth: int) -> Possible | None:
        """What a same-module function or method (``self.policy()``) returns, when every
        ``return`` is resolvable."""
        definition = self.model.definition(call.func)
        if definition is None and isinstance(call.func, cst.Attribute):
            owner = receiver_class(self.model, call.func.value)
            definition = method(self.model, owner, call.func.attr.value) if owner is not None else None
        if not isinstance(definition, cst.FunctionDef) or definition.asynchronous or not self._plain(definition):
            return None
        returns = function_returns(definition)
        if returns is None:
            return None
        found: Possible = ()
        for expr in returns:
            expr = self._branch_taken(call, definition, expr, depth) if expr is not None else None
            values = (Value("none"),) if expr is None else self.possible(expr, depth)
            if values is None:
                return None
            found = union(found, tuple(v.sourced(f"{definition.name.value}()") for v in values))  # type: ignore[assignment]  # the union of two known sets is known
        return found

    def _branch_taken(
        self, call: cst.Call, definition: cst.FunctionDef, expr: cst.BaseExpression, depth: int
    ) -> cst.BaseExpression:
        """``a if flag else b`` returned, where ``flag`` is a parameter the call gives a value of
        known truth (``pick(True)``, ``pick(0)``): the branch taken; ``expr`` otherwise (a method's
        arguments are left alone: ``self`` shifts them)."""
        info = self.model.functions.get(id(definition))
        while isinstance(expr, cst.IfExp) and isinstance(expr.test, cst.Name) and info and info.class_node is None:
            bindings = self.model.bindings_at(expr.test) or []
            param = bindings[0].node if len(bindings) == 1 and bindings[0].kind == "param" else None
            passed = _argument_for(call, definition, param) if isinstance(param, cst.Param) else None
            value = self.single(passed, depth) if passed is not None else None
            if value is None or (value.literal is None and value.kind != "none"):
                break
            expr = expr.body if value.literal else expr.orelse
        return expr

    def _plain(self, definition: cst.FunctionDef) -> bool:
        """A function that returns what its body does: undecorated, or only memoized."""
        for decorator in definition.decorators:
            expr = decorator.decorator
            if isinstance(expr, cst.Call):
                expr = expr.func  # ``@functools.lru_cache(maxsize=None)``
            if self.model.qualified_name(expr) not in _CACHES:
                return False
        return True

    def _sequences(
        self, expr: cst.BaseExpression, depth: int, kinds: tuple[Kind, ...] = ("tuple", "list", "set")
    ) -> list[tuple[Value, ...]] | None:
        """The items of every literal of ``kinds`` ``expr`` can hold (a name bound to one that
        nothing mutates); None when one of its values is anything else."""
        if isinstance(expr, cst.Name) and self.mutated(expr.value):
            return None
        found: list[tuple[Value, ...]] = []
        for value in self.possible(expr, depth) or (None,):
            if value is None or value.kind not in kinds or value.items is None:
                return None
            found.append(value.items)
        return found

    def _elements(self, iterated: cst.BaseExpression, depth: int) -> Possible | None:
        """What a loop variable over ``iterated`` can be: any element of the literal or the
        comprehension it is."""
        sequences = self._sequences(iterated, depth)
        if not sequences:
            return self._comprehension_element(iterated, depth)
        found: Possible | None = ()
        for items in sequences:
            found = union(found, items)
        return found or None

    def _comprehension_element(self, expr: cst.BaseExpression, depth: int) -> Possible | None:
        """What any element of a list, set or generator comprehension can be: ``expr`` itself, a
        name bound once to one that nothing mutates, or ``self.<attr>`` its class assigns once."""
        found: cst.BaseExpression | None = expr
        for _ in range(MAX_DEPTH):
            if isinstance(found, cst.Name) and not self.mutated(found.value):
                found = self.model.assigned_value(found)
            elif isinstance(found, cst.Attribute) and (cls := receiver_class(self.model, found.value)) is not None:
                found = instance_attribute(self.model, cls, found.attr.value)
            else:
                break
        return self.possible(found.elt, depth) if isinstance(found, _COMPREHENSIONS) else None

    def _item(self, sequence: cst.BaseExpression, key: cst.BaseExpression, depth: int) -> Possible | None:
        """``sequence[i]`` of a tuple or list literal (or a name bound to one) and an integer ``i``,
        or any ``i`` of a list comprehension (any element)."""
        element = self._comprehension_element(sequence, depth)
        if element is not None:
            return element
        index = self.single(key, depth)
        if index is None or index.kind != "int" or not isinstance(index.literal, int):
            return None
        sequences = self._sequences(sequence, depth, kinds=("tuple", "list"))  # a set has no index
        if not sequences:
            return None
        found: Possible | None = ()
        for items in sequences:
            if not -len(items) <= index.literal < len(items):
                return None  # unknown, or IndexError
            found = union(found, (items[index.literal],))
        return found or None


def deferred(qname: str, instance: bool) -> Possible:
    """The ``imported`` callback of a file's own pass, which must not depend on other files (its
    results are cached by its content): imported names stay placeholders for the project phase."""
    return (Value("imported_field" if instance else "imported", qname=qname),)


def _argument_for(call: cst.Call, definition: cst.FunctionDef, param: cst.Param) -> cst.BaseExpression | None:
    """What ``call`` passes to ``param`` of ``definition`` (a plain function: no ``self``), by
    position or keyword; None when it may be anything else (``*args``, its default)."""
    if any(a.star for a in call.args):
        return None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == param.name.value:
            return arg.value
    positional = [a.value for a in call.args if a.keyword is None]
    params = list(definition.params.posonly_params) + list(definition.params.params)
    index = next((i for i, p in enumerate(params) if p is param), None)
    return positional[index] if index is not None and index < len(positional) else None


def _policy(qname: str | None) -> Value | None:
    info = policy_info(qname)
    if info is None:
        return None
    return Value("factory" if info.kind == "factory" else "policy", qname=qname)


def _framework_class(qname: str | None) -> Value | None:
    """A framework's Module class or layer (``flax.linen.Dense``)."""
    family = MODULE_FAMILIES.get(qname or "")
    return Value("module_class", qname=qname, framework=family) if family is not None else None


def _classes_of(instances: Possible | None) -> Possible | None:
    """The classes of ``instances`` when each is a Module instance (``block.__class__``)."""
    if not instances or any(v.kind != "module_instance" for v in instances):
        return None
    # An imported class keeps the call that built the instance: it names the class as imported.
    return tuple(replace(v, kind="module_class", node=v.definition or v.node, via=None) for v in instances)


def _subscript_writes(module: cst.Module) -> set[str]:
    """Names written through a subscript anywhere in the module (``D[k] = v``, ``del D[k]``)."""
    found: set[str] = set()
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        targets: list[cst.CSTNode]
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.Del)):
            targets = [node.target]
        else:
            targets = []
        found.update(t.value.value for t in targets if isinstance(t, cst.Subscript) and isinstance(t.value, cst.Name))
        stack.extend(child_nodes(node))
    return found
