"""What an enum member holds, for the value layer (``values.Values``): ``Mode.FULL.value`` and
``Mode["FULL"].value`` of an enum class this module defines read the expression its class body
assigns to ``FULL``.

Only plain members count: a class whose body defines methods that may change what a member
holds (``__new__``, ``_generate_next_value_``, ``__init__``) is left alone, and so is a member
spelled twice (an alias decides nothing here, but a reassignment raises at class creation).
"""

from __future__ import annotations

import libcst as cst

from remat_lint.analysis.semantic import SemanticModel

ENUM_BASES = frozenset({"enum.Enum", "enum.StrEnum", "enum.IntEnum"})
_CUSTOM_MEMBERS = frozenset({"__new__", "__init__", "_generate_next_value_", "_missing_"})


def member_value(model: SemanticModel, expr: cst.Attribute) -> cst.BaseExpression | None:
    """The class-body expression of the member ``expr`` reads the ``.value`` of, else None."""
    if expr.attr.value != "value":
        return None
    member = expr.value
    if isinstance(member, cst.Attribute):
        owner, name = member.value, member.attr.value
    elif isinstance(member, cst.Subscript) and len(member.slice) == 1 and isinstance(member.slice[0].slice, cst.Index):
        key = member.slice[0].slice.value
        if not (isinstance(key, cst.SimpleString) and isinstance(key.evaluated_value, str)):
            return None
        owner, name = member.value, key.evaluated_value
    else:
        return None
    cls = model.definition(owner)
    if not isinstance(cls, cst.ClassDef) or not _is_plain_enum(model, cls):
        return None
    assigned = [
        statement.value
        for line in _body(cls)
        if isinstance(line, cst.SimpleStatementLine)
        for statement in line.body
        if isinstance(statement, cst.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0].target, cst.Name)
        and statement.targets[0].target.value == name
    ]
    return assigned[0] if len(assigned) == 1 else None


def _is_plain_enum(model: SemanticModel, cls: cst.ClassDef) -> bool:
    """An enum class (a direct subclass of ``enum.Enum`` and kin) with no method that changes
    what its members hold."""
    if not any(base.keyword is None and model.qualified_name(base.value) in ENUM_BASES for base in cls.bases):
        return False
    return not any(isinstance(line, cst.FunctionDef) and line.name.value in _CUSTOM_MEMBERS for line in _body(cls))


def _body(cls: cst.ClassDef) -> tuple[cst.CSTNode, ...]:
    return tuple(cls.body.body) if isinstance(cls.body, cst.IndentedBlock) else ()
