"""What a field of a module-level class can hold when a method reads it as ``self.<field>``.

A Flax linen Module (any dataclass) holds a setting in a field: ``dropout_rate: float = 0.1``, set
by its constructions (``Block(dropout_rate=0.0)``, ``nn.remat(Block)(dropout_rate=0.0)``). What
``self.dropout_rate`` can be is the default and whatever a construction passes. This module's own
part is decided here (``field_values``); the other modules' constructions are the project's
(``project.model.Project.field_values``), from each module's ``keyword_values`` and
``imported_uses``.

Every value must be known: a construction passing the field by position, spreading ``**kwargs``,
a use of the class other than a construction or a remat wrap of it (passed on, subclassed,
``functools.partial``), a method writing ``self.<field>``: unknown. A keyword is not matched to
its callee: every call of the module passing ``<field>=`` counts, which can only lose a finding.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from remat_lint.analysis.bodies import receiver_class
from remat_lint.analysis.callables import self_writes
from remat_lint.analysis.semantic import SemanticModel
from remat_lint.analysis.value import union
from remat_lint.analysis.values import Possible, Values
from remat_lint.apis import PARTIAL, remat_api
from remat_lint.project.modules import LIBRARIES

_CLASS_VARS = frozenset({"typing.ClassVar", "typing_extensions.ClassVar"})
_CUSTOM_INIT = frozenset({"__init__", "__post_init__", "__new__", "__setattr__"})
_COPY_METHODS = frozenset({"replace", "_replace"})


@dataclass(frozen=True)
class HeldField:
    """``self.<field>`` of a module-level class that declares the field with a default."""

    cls: str
    field: str
    # The field's place among the class's own fields: a construction with more positional
    # arguments than this may set it (a base class's fields only come before it).
    position: int
    # Module-level names bound to a remat wrap of the class (``RematBlock = nn.remat(Block)``),
    # which other modules may construct too.
    aliases: tuple[str, ...] = ()


def held_field(model: SemanticModel, expr: cst.BaseExpression) -> HeldField | None:
    """The field ``expr`` reads, when it is ``self.<field>`` in a method of a module-level class
    whose body declares it once with a default, whose methods never write it and that has no
    constructor of its own (``__init__``, ``__post_init__``...: its parameters need not be the
    fields)."""
    if not isinstance(expr, cst.Attribute):
        return None
    cls = receiver_class(model, expr.value)
    if cls is None or model.parent(cls) is not model.module:
        return None
    if any(isinstance(line, cst.FunctionDef) and line.name.value in _CUSTOM_INIT for line in cls.body.body):
        return None  # its constructor's parameters need not be its fields
    name = expr.attr.value
    fields = own_fields(model, cls)
    declared = model.class_scopes[id(cls)].bindings.get(name, ())
    if name not in fields or len(declared) != 1 or _default(model, cls, name) is None:
        return None
    for info in model.functions.values():
        if info.class_node is cls and isinstance(info.node, cst.FunctionDef) and self_writes(model, info.node, name):
            return None
    return HeldField(cls.name.value, name, fields.index(name), _aliases(model, cls))


def field_values(model: SemanticModel, values: Values, field: HeldField) -> Possible | None:
    """What the field can hold as far as this module tells: its default and every value a call of
    the module passes as ``<field>=``; None when one is unknown or a use of the class may set it
    otherwise."""
    cls = next(c for c in model.classes if c.name.value == field.cls and model.parent(c) is model.module)
    arity = construction_arity(model, cls)
    if arity is None or arity > field.position:
        return None
    found = values.possible(_default(model, cls, field.field))  # type: ignore[arg-type]  # held_field checked the default
    for passed in keyword_arguments(model, field.field):
        found = union(found, values.possible(passed))
    return found


def keyword_arguments(model: SemanticModel, keyword: str) -> list[cst.BaseExpression]:
    """The values the module's calls that may construct a class pass as ``keyword=``."""
    return [
        arg.value
        for call in model.calls
        if may_construct(model, call)
        for arg in call.args
        if arg.keyword is not None and arg.keyword.value == keyword
    ]


def may_construct(model: SemanticModel, call: cst.Call) -> bool:
    """``call`` may build (or copy, ``dataclasses.replace``) a class of the project: it is not a
    function of a library the project defines no class in (``jax.checkpoint(f, policy=...)``
    passes ``policy=`` to JAX, not to a config class)."""
    qname = model.qualified_name(call.func)
    if qname in PARTIAL and call.args:  # ``partial(jax.checkpoint, policy=...)``: the function's
        qname = model.qualified_name(call.args[0].value)
    return qname is None or qname.split(".", 1)[0] not in LIBRARIES


def copies(model: SemanticModel, call: cst.Call) -> bool:
    """``call`` copies an instance with fields changed: ``dataclasses.replace(cfg, ...)``,
    ``cfg.replace(...)`` (``flax.struct``), ``cfg._replace(...)`` (``NamedTuple``)."""
    func = call.func
    return model.qualified_name(func) == "dataclasses.replace" or (
        isinstance(func, cst.Attribute) and func.attr.value in _COPY_METHODS and may_construct(model, call)
    )


def own_fields(model: SemanticModel, cls: cst.ClassDef) -> list[str]:
    """The annotated names of the class body, in order (``ClassVar`` ones are no fields)."""
    fields = []
    for line in cls.body.body:
        statement = line.body[0] if isinstance(line, cst.SimpleStatementLine) else None
        if isinstance(statement, cst.AnnAssign) and isinstance(statement.target, cst.Name):
            annotation = statement.annotation.annotation
            owner = annotation.value if isinstance(annotation, cst.Subscript) else annotation
            if model.qualified_name(owner) not in _CLASS_VARS:
                fields.append(statement.target.value)
    return fields


def _default(model: SemanticModel, cls: cst.ClassDef, name: str) -> cst.BaseExpression | None:
    binding = model.class_scopes[id(cls)].bindings[name][0]
    return binding.node.value if isinstance(binding.node, cst.AnnAssign) else None


def _references(model: SemanticModel, cls: cst.ClassDef) -> list[cst.Name]:
    """The names in the module that denote ``cls``."""
    return [
        name
        for name in model.names
        if name.value == cls.name.value and any(b.node is cls for b in model.bindings_at(name) or ())
    ]


def construction_arity(model: SemanticModel, cls: cst.ClassDef) -> int | None:
    """The most positional arguments a use of ``cls`` in the module passes when every use only
    constructs it (-1 when none does); None when a use may do anything else."""
    most = -1
    for use in _references(model, cls):
        if in_annotation(model, use):
            continue  # ``cfg: Config`` builds nothing
        arity = _arity(model, use)
        if arity is None:
            return None
        most = max(most, arity)
    return most


def in_annotation(model: SemanticModel, node: cst.CSTNode) -> bool:
    """``node`` is part of a type annotation (``cfg: Config``, ``-> Optional[Config]``)."""
    return any(isinstance(a, cst.Annotation) for a in model.ancestors(node))


def _arity(model: SemanticModel, use: cst.BaseExpression, depth: int = 0) -> int | None:
    """The most positional arguments passed where ``use`` (the class, or a remat wrap of it) is
    constructed, when it is only constructed: called without ``*``/``**``, wrapped by a remat API
    (``nn.remat(Block)``) that is itself only constructed, or bound to a name only constructed;
    None otherwise."""
    parent = model.parent(use)
    if isinstance(parent, cst.Call) and parent.func is use:
        return None if any(a.star for a in parent.args) else sum(a.keyword is None for a in parent.args)
    wrap = model.parent(parent) if isinstance(parent, cst.Arg) and parent.keyword is None else None
    if isinstance(wrap, cst.Call) and wrap.args[0] is parent and remat_api(model.qualified_name(wrap.func)):
        return _arity(model, wrap, depth + 1) if depth < 2 else None
    if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
        target = parent.targets[0].target
        uses = [
            n
            for n in model.names
            if n.value == target.value and n is not target and any(b.node is parent for b in model.bindings_at(n) or ())
        ]
        arities = [_arity(model, n, depth + 1) for n in uses] if depth < 2 else [None]
        return None if None in arities else max([0, *(a for a in arities if a is not None)])
    return None


def _aliases(model: SemanticModel, cls: cst.ClassDef) -> tuple[str, ...]:
    """Module-level names bound to a remat wrap of ``cls`` (``RematBlock = nn.remat(Block)``)."""
    found = []
    for name, bindings in model.module_scope.bindings.items():
        value = bindings[0].value if len(bindings) == 1 and bindings[0].kind == "assign" else None
        if (
            isinstance(value, cst.Call)
            and value.args
            and remat_api(model.qualified_name(value.func))
            and model.definition(value.args[0].value) is cls
        ):
            found.append(name)
    return tuple(found)
