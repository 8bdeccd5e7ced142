"""What configuration holds, for the value layer (``values.Values``), which resolves what each
source is set to. Each answers with every value it can give, or None when one is unknown:

- config fields: ``Config.field`` of a config class of this module (a dataclass, ``attrs``,
  ``flax.struct``, ``chex``, ``NamedTuple`` or plain class: its class-body value), ``cfg.field``
  where ``cfg = Config(...)`` builds one (the argument given, else the class-body default), or
  ``cfg`` is a parameter annotated with such a class (or ``cfg.sub`` a field declared with one)
  whose field is annotated ``str``/``bool``/``int`` with a default of that type; the one value
  an ``ml_collections.ConfigDict`` entry is set to;
- the environment (``os.environ.get``/``os.getenv``/``os.environ[...]``: a ``str``, or the
  default), absl flags (``FLAGS.name``, ``flag.value``) and argparse options (``args.name``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from remat_lint.analysis.bodies import receiver_class
from remat_lint.analysis.callables import self_writes
from remat_lint.analysis.semantic import SemanticModel
from remat_lint.analysis.value import (
    MAX_DEPTH,
    Kind,
    Possible,
    Value,
    call_argument,
    evaluated,
    function_returns,
    keyword_value,
    literal_value,
    union,
)
from remat_lint.apis import equinox, flax

if TYPE_CHECKING:
    from remat_lint.analysis.values import Values

ENVIRONMENT_GETTERS = frozenset({"os.environ.get", "os.getenv"})
_ANNOTATED_KINDS: dict[str, Kind] = {"str": "str", "bool": "bool", "int": "int"}
_LITERAL = frozenset({"typing.Literal", "typing_extensions.Literal"})
_OPTIONAL = frozenset({"typing.Optional", "typing_extensions.Optional"})
_CUSTOM_INIT = frozenset({"__init__", "__post_init__", "__new__", "__getattr__", "__getattribute__", "__setattr__"})
_DATACLASS_DECORATORS = frozenset(
    {
        "dataclasses.dataclass",
        flax.STRUCT_DATACLASS,
        "chex.dataclass",
        "attr.s",
        "attr.attrs",
        "attr.define",
        "attr.frozen",
        "attrs.define",
        "attrs.frozen",
        "attr.dataclass",
    }
)
_CONFIG_DICTS = frozenset({"ml_collections.ConfigDict", "ml_collections.config_dict.ConfigDict"})
_CONFIG_BASES = frozenset({"builtins.object", "typing.NamedTuple", flax.PYTREE_NODE, equinox.MODULE})
_ABSL_FLAGS = frozenset({"absl.flags.FLAGS", "absl.flags.FlagValues"})
_ABSL_DEFINES: dict[str, Kind] = {
    "DEFINE_string": "str",
    "DEFINE_enum": "str",
    "DEFINE_bool": "bool",
    "DEFINE_boolean": "bool",
    "DEFINE_integer": "int",
    "DEFINE_float": "float",
}


class ConfigSources:
    """The configuration sources of one module, resolving what they are set to through ``values``."""

    def __init__(self, values: Values) -> None:
        self.values = values
        self.model = values.model

    def attribute(self, expr: cst.Attribute, depth: int) -> Possible | None:
        """``cfg.field`` of a config object, ``FLAGS.name`` or ``args.name``; None for anything else."""
        return self._config_field(expr, depth) or self._flag(expr) or self._parsed_argument(expr, depth)

    def fields(self, cls: cst.ClassDef) -> dict[str, tuple[Possible | None, Possible | None]]:
        """What other modules may read of a config class of this module: per field that nothing
        here assigns, the values of its default (``Config.field``, ``Config().field``) and those
        any instance may hold (``cfg: Config``); empty for a class that is no config class."""
        if not self._is_config_class(cls):
            return {}
        fields: dict[str, tuple[Possible | None, Possible | None]] = {}
        for statement in _class_statements(cls):
            targets = (
                [statement.target]
                if isinstance(statement, cst.AnnAssign)
                else ([t.target for t in statement.targets] if isinstance(statement, cst.Assign) else [])
            )
            for target in targets:
                if isinstance(target, cst.Name) and not self.field_written(target.value):
                    default = _field_default(cls, target.value)
                    via = f"{cls.name.value}.{target.value}"
                    fields[target.value] = (
                        self.values.possible(default) if default is not None else None,
                        self._annotated_field(cls, target.value, via, 0),
                    )
        return fields

    def environment(self, call: cst.Call, qname: str, depth: int) -> Possible | None:
        """``os.environ.get(name, default)``: a str when the variable is set, else the default."""
        if any(a.keyword is not None or a.star for a in call.args) or not 1 <= len(call.args) <= 2:
            return None
        default = self.values.possible(call.args[1].value, depth) if len(call.args) == 2 else (Value("none"),)
        if default is None:
            return None
        return union((Value("str", node=call, via=qname),), tuple(v.sourced(qname) for v in default))

    def environment_item(self, expr: cst.Subscript) -> Possible | None:
        """``os.environ[name]``: a str (or ``KeyError``)."""
        return (
            (Value("str", node=expr, via="os.environ"),)
            if self.model.qualified_name(expr.value) == "os.environ"
            else None
        )

    def _config_field(self, expr: cst.Attribute, depth: int) -> Possible | None:
        """``cfg.field`` of a config object whose class this module defines, of a config a Module
        holds in a typed field (``self.config.field``), or of an ``ml_collections.ConfigDict``."""
        field = expr.attr.value
        via = f"{self.model.module.code_for_node(expr)}"
        config_dict = self._config_dict(expr.value)
        if config_dict is not None:
            return self._config_dict_field(config_dict, field, via, depth)
        if self.field_written(field):
            return None
        if isinstance(expr.value, cst.Attribute):
            cls = self._typed_attribute(expr.value) or self._config_class_of(expr.value)
            return self._annotated_field(cls, field, via, depth) if cls is not None else None
        binding = self.model.single_binding(expr.value)
        if binding is None:
            return None
        if binding.kind == "class" and self._is_config_class(binding.node):  # type: ignore[arg-type]  # a class binding's node is its ClassDef
            default = _field_default(binding.node, field)  # type: ignore[arg-type]  # ``Config.remat_policy``
            values = self.values.possible(default, depth) if default is not None else None
            return tuple(v.sourced(via) for v in values) if values is not None else None
        if binding.kind == "assign" and isinstance(binding.value, cst.Call):
            defined = self.model.definition(binding.value.func)
            if not isinstance(defined, cst.ClassDef) or not self._is_config_class(defined):
                return None
            argument = keyword_value(binding.value, field)
            if argument is not None:
                values = self.values.possible(argument, depth)
            elif any(a.keyword is None for a in binding.value.args):
                return None  # positional arguments: which field each fills is not worked out
            else:
                default = _field_default(defined, field)
                values = self.values.possible(default, depth) if default is not None else None
            return tuple(v.sourced(via) for v in values) if values is not None else None
        if binding.kind == "param":
            cls = self._config_class_of(expr.value)
            return (self._annotated_field(cls, field, via, depth) or self._any_instance(cls, field)) if cls else None
        return None

    def _any_instance(self, cls: cst.ClassDef, field: str) -> Possible | None:
        """A field with a default of any instance of a module-level config class, when the value
        layer defers to the project (``Values.imported``): a placeholder that the project resolves
        from every construction of the class (``project.fields.instance_values``)."""
        if self.values.imported is None or self.model.parent(cls) is not self.model.module:
            return None
        return (Value("local_field", qname=f"{cls.name.value}.{field}"),) if _field_default(cls, field) else None

    def _typed_attribute(self, expr: cst.Attribute) -> cst.ClassDef | None:
        """The config class of ``self.<attr>`` when the instance's class declares ``<attr>: Config``
        (a Flax Module field) and no method assigns it."""
        owner = receiver_class(self.model, expr.value)
        if owner is None or self_writes_in(self.model, owner, expr.attr.value):
            return None
        for statement in _class_statements(owner):
            if (
                isinstance(statement, cst.AnnAssign)
                and isinstance(statement.target, cst.Name)
                and statement.target.value == expr.attr.value
                and statement.value is None
            ):
                cls = self.model.definition(statement.annotation.annotation)
                return cls if isinstance(cls, cst.ClassDef) and self._is_config_class(cls) else None
        return None

    def _config_class_of(self, expr: cst.BaseExpression, depth: int = 0) -> cst.ClassDef | None:
        """The config class of this module that ``expr`` is an instance of: ``cfg`` built by
        ``Config(...)`` or annotated ``Config``, or a nested field declared with such a class
        (``cfg.remat`` for ``remat: RematConfig = ...``) that nothing assigns."""
        if depth > MAX_DEPTH:
            return None
        if isinstance(expr, cst.Attribute):
            owner = self._config_class_of(expr.value, depth + 1)
            if owner is None or self.field_written(expr.attr.value):
                return None
            for statement in _class_statements(owner):
                if (
                    isinstance(statement, cst.AnnAssign)
                    and isinstance(statement.target, cst.Name)
                    and statement.target.value == expr.attr.value
                ):
                    cls = self.model.definition(statement.annotation.annotation)
                    return cls if isinstance(cls, cst.ClassDef) and self._is_config_class(cls) else None
            return None
        binding = self.model.single_binding(expr)
        if binding is None:
            return None
        if binding.kind == "assign" and isinstance(binding.value, cst.Call):
            cls = self.model.definition(binding.value.func)
        elif binding.kind == "param" and isinstance(binding.node, cst.Param) and binding.node.annotation is not None:
            cls = self.model.definition(binding.node.annotation.annotation)
        else:
            return None
        return cls if isinstance(cls, cst.ClassDef) and self._is_config_class(cls) else None

    def _config_dict(self, expr: cst.BaseExpression, depth: int = 0) -> cst.Name | None:
        """The name an ``ml_collections.ConfigDict`` is built into, when ``expr`` is that name or a
        call of a same-module function that returns it (``cfg = get_config()``)."""
        if depth > 2 or not isinstance(expr, (cst.Name, cst.Call)):
            return None
        value = self.model.assigned_value(expr) if isinstance(expr, cst.Name) else expr
        if not isinstance(value, cst.Call):
            return None
        if self.model.qualified_name(value.func) in _CONFIG_DICTS:
            return expr if isinstance(expr, cst.Name) else None
        definition = self.model.definition(value.func)
        if not isinstance(definition, cst.FunctionDef) or definition.decorators:
            return None
        returns = function_returns(definition)
        if not returns or len(returns) != 1 or not isinstance(returns[0], cst.Name):
            return None
        return self._config_dict(returns[0], depth + 1)

    def _config_dict_field(self, built: cst.Name, field: str, via: str, depth: int) -> Possible | None:
        """The one value written to ``<built>.field`` in the module, where ``built`` names the
        ConfigDict (any other write of ``.field``, an override, makes it unknown)."""
        writes = [
            a
            for a in self.model.attributes
            if a.attr.value == field
            and isinstance(self.model.parent(a), (cst.AssignTarget, cst.AugAssign, cst.AnnAssign))
        ]
        if len(writes) != 1:
            return None
        (write,) = writes
        target = self.model.parent(write)
        statement = self.model.parent(target)
        receiver = write.value
        if not (
            isinstance(receiver, cst.Name)
            and receiver.value == built.value
            and isinstance(statement, cst.Assign)
            and len(statement.targets) == 1
            and self.model.scope_of(receiver) is self.model.scope_of(built)
        ):
            return None
        values = self.values.possible(statement.value, depth)
        return tuple(v.sourced(via) for v in values) if values is not None else None

    def _is_config_class(self, cls: cst.ClassDef, depth: int = 0) -> bool:
        """A class whose instances hold their class-body fields: a dataclass (``dataclasses``,
        ``flax.struct``, ``chex``, ``attrs``) or a plain class, with no ``__init__``-like method of
        its own and bases that are config classes too."""
        if depth > MAX_DEPTH or any(
            isinstance(line, cst.FunctionDef) and line.name.value in _CUSTOM_INIT for line in _class_body(cls)
        ):
            return False
        for decorator in cls.decorators:
            expr = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
            if self.model.qualified_name(expr) not in _DATACLASS_DECORATORS:
                return False
        for base in cls.bases:
            if base.keyword is not None or self.model.qualified_name(base.value) in _CONFIG_BASES:
                continue
            parent = self.model.definition(base.value)
            if not isinstance(parent, cst.ClassDef) or not self._is_config_class(parent, depth + 1):
                return False
        return True

    def _annotated_field(self, cls: cst.ClassDef, field: str, via: str, depth: int) -> Possible | None:
        """A field any instance may hold: annotated ``str``/``bool``/``int`` with a default of that
        kind, or ``Literal[...]`` (also ``Optional``/``| None``) with a default among its values."""
        for statement in _class_statements(cls):
            if (
                isinstance(statement, cst.AnnAssign)
                and isinstance(statement.target, cst.Name)
                and statement.target.value == field
            ):
                annotation = statement.annotation.annotation
                default = self.values.single(statement.value, depth) if statement.value is not None else None
                literals = self._literal_annotation(annotation)
                if literals is not None:
                    allowed = {(v.kind, v.literal) for v in literals}
                    if default is not None and (default.kind, default.literal) not in allowed:
                        return None
                    return tuple(Value(v.kind, v.literal, node=statement, via=via) for v in literals)
                kind = _ANNOTATED_KINDS.get(annotation.value) if isinstance(annotation, cst.Name) else None
                if kind is None or default is None or default.kind != kind:
                    return None
                return (Value(kind, node=statement, via=via),)
        return None

    def _literal_annotation(self, annotation: cst.BaseExpression) -> Possible | None:
        """The values ``Literal["a", "b"]``, ``Optional[Literal[...]]`` or ``Literal[...] | None``
        allow, each a literal; None for any other annotation."""
        if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
            sides = [self._literal_annotation(annotation.left), self._literal_annotation(annotation.right)]
            return None if None in sides else union(*sides)
        if isinstance(annotation, cst.Name) and annotation.value == "None":
            return (Value("none"),)
        if not isinstance(annotation, cst.Subscript):
            return None
        qname = self.model.qualified_name(annotation.value)
        elements = [e.slice.value for e in annotation.slice if isinstance(e.slice, cst.Index)]
        if len(elements) != len(annotation.slice):
            return None
        if qname in _OPTIONAL and len(elements) == 1:
            return union(self._literal_annotation(elements[0]), (Value("none"),))
        if qname not in _LITERAL:
            return None
        values = [literal_value(e) for e in elements]
        known = tuple(v for v in values if v is not None)
        return known if known and len(known) == len(values) else None

    def field_written(self, field: str) -> bool:
        """Some statement assigns ``<x>.field`` (``__post_init__``, a later override): unknown."""
        return any(
            attribute.attr.value == field
            and isinstance(self.model.parent(attribute), (cst.AssignTarget, cst.AugAssign))
            for attribute in self.model.attributes
        )

    def _flag(self, expr: cst.Attribute) -> Possible | None:
        """``FLAGS.name`` (absl) or ``HOLDER.value`` for ``HOLDER = flags.DEFINE_string(...)``."""
        define: cst.Call | None = None
        if self.model.qualified_name(expr.value) in _ABSL_FLAGS:
            define = self._absl_definition(expr.attr.value)
        elif expr.attr.value == "value" and isinstance(expr.value, cst.Name):
            holder = self.model.assigned_value(expr.value)
            if isinstance(holder, cst.Call) and _absl_define_kind(self.model, holder) is not None:
                define = holder
        if define is None:
            return None
        kind = _absl_define_kind(self.model, define)
        default = call_argument(define, 1, "default")
        if kind is None or default is None:
            return None
        via = f"flag `{evaluated(define.args[0].value) if define.args else '?'}`"
        value = Value(kind, node=define, via=via)
        default_value = literal_value(default)
        if default_value is None or default_value.kind not in (kind, "none"):
            return None
        return union((value,), (default_value.sourced(via),))

    def _absl_definition(self, name: str) -> cst.Call | None:
        found = [
            call
            for call in self.model.calls
            if _absl_define_kind(self.model, call) is not None and call.args and evaluated(call.args[0].value) == name
        ]
        return found[0] if len(found) == 1 else None

    def _parsed_argument(self, expr: cst.Attribute, depth: int) -> Possible | None:
        """``args.name`` for ``args = parser.parse_args()`` and ``parser.add_argument("--name", ...)``
        without ``type=`` (or ``type=str``), ``action=`` or ``nargs=``: a str, or the default."""
        if not isinstance(expr.value, cst.Name):
            return None
        parsed = self.model.assigned_value(expr.value)
        if not (
            isinstance(parsed, cst.Call)
            and isinstance(parsed.func, cst.Attribute)
            and parsed.func.attr.value == "parse_args"
        ):
            return None
        parser = parsed.func.value
        if not isinstance(parser, cst.Name):
            return None
        made = self.model.assigned_value(parser)
        if not (isinstance(made, cst.Call) and self.model.qualified_name(made.func) == "argparse.ArgumentParser"):
            return None
        options = [c for c in self.model.calls if _adds_argument(c, parser.value) and _dest(c) == expr.attr.value]
        if len(options) != 1:
            return None
        option = options[0]
        if any(keyword_value(option, k) is not None for k in ("action", "nargs", "const")):
            return None
        kind = keyword_value(option, "type")
        if kind is not None and self.model.qualified_name(kind) != "builtins.str":
            return None
        default = keyword_value(option, "default")
        via = f"`--{expr.attr.value}`"
        defaults = (Value("none"),) if default is None else self.values.possible(default, depth)
        if defaults is None:
            return None
        return union((Value("str", node=option, via=via),), tuple(v.sourced(via) for v in defaults))


def self_writes_in(model: SemanticModel, cls: cst.ClassDef, name: str) -> bool:
    """Some method of ``cls`` writes ``self.<name>``."""
    return any(
        info.class_node is cls and isinstance(info.node, cst.FunctionDef) and self_writes(model, info.node, name)
        for info in model.functions.values()
    )


def _class_body(cls: cst.ClassDef) -> tuple[cst.CSTNode, ...]:
    return tuple(cls.body.body) if isinstance(cls.body, cst.IndentedBlock) else ()


def _class_statements(cls: cst.ClassDef) -> list[cst.BaseSmallStatement]:
    return [s for line in _class_body(cls) if isinstance(line, cst.SimpleStatementLine) for s in line.body]


def _field_default(cls: cst.ClassDef, field: str) -> cst.BaseExpression | None:
    for statement in _class_statements(cls):
        if (
            isinstance(statement, cst.AnnAssign)
            and isinstance(statement.target, cst.Name)
            and statement.target.value == field
        ):
            return statement.value
        if isinstance(statement, cst.Assign) and any(
            isinstance(t.target, cst.Name) and t.target.value == field for t in statement.targets
        ):
            return statement.value
    return None


def _absl_define_kind(model: SemanticModel, call: cst.Call) -> Kind | None:
    qname = model.qualified_name(call.func) or ""
    module, _, name = qname.rpartition(".")
    return _ABSL_DEFINES.get(name) if module == "absl.flags" else None


def _adds_argument(call: cst.Call, parser: str) -> bool:
    func = call.func
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value == "add_argument"
        and isinstance(func.value, cst.Name)
        and func.value.value == parser
    )


def _dest(call: cst.Call) -> str | None:
    dest = keyword_value(call, "dest")
    if dest is not None:
        return evaluated(dest)
    names = [evaluated(a.value) for a in call.args if a.keyword is None]
    longs = [n for n in names if n is not None and n.startswith("--")]
    if longs:
        return longs[0][2:].replace("-", "_")
    return names[0] if names and names[0] is not None and not names[0].startswith("-") else None
