"""What a checkpoint's policy is: the ``policy=`` a site gets, what a policy expression saves,
the literal checkpoint names a name-based policy uses, and the names ``checkpoint_name`` declares.

Everything here is certain or None: an expression that cannot be resolved (a config lookup, a
parameter, a name bound twice) gives None, so rules stay silent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import libcst as cst

from remat_lint.analysis.checkpoint_names import CheckpointNames
from remat_lint.analysis.semantic import SemanticModel
from remat_lint.analysis.sites import RematSite
from remat_lint.analysis.values import Value, Values, function_returns
from remat_lint.apis import CHECKPOINT_NAME, PARTIAL, PolicyInfo, policy_info

# What a literal name does in each name-based factory (save_anything_except_these_names ignores
# its names: it saves everything).
NameRole = Literal["saved", "excluded", "offloaded"]
_VARARG_ROLES: dict[str, NameRole] = {"save_only_these_names": "saved", "save_any_names_but_these": "excluded"}
_KEYWORD_ROLES: dict[str, NameRole] = {"names_which_can_be_saved": "saved", "names_which_can_be_offloaded": "offloaded"}


def site_policy(site: RematSite) -> cst.BaseExpression | None:
    """The policy a site is given: ``policy=``, or Flax linen's positional ``policy`` slot."""
    arg = site.keyword("policy")
    if arg is not None:
        return arg.value
    if "policy" in site.api.positional:
        index = site.api.positional.index("policy")
        if len(site.positional) > index:
            return site.positional[index].value
    return None


Returned = bool | int | float | str | None  # a constant a policy returns


def constant_return(values: Values, expr: cst.BaseExpression) -> tuple[Returned, cst.CSTNode] | None:
    """For a custom policy (a def or lambda ``expr`` certainly holds, by the value layer) that
    returns the same literal constant on every path: that constant (a bool, None, a number or a
    string) and the definition; else None."""
    policy = values.single(expr)
    definition = policy.node if policy is not None and policy.kind == "callable" else None
    returned: list[cst.BaseExpression | None] | None
    if isinstance(definition, cst.Lambda):
        returned = [definition.body]
    elif isinstance(definition, cst.FunctionDef) and definition.asynchronous is None and not definition.decorators:
        returned = function_returns(definition)  # a decorator may change what the function returns
    else:
        return None
    if returned is None:
        return None  # a generator
    # One entry per distinct returned constant (a bare or implicit ``return`` is None), typed so
    # that ``1`` and ``True`` differ; None marks a return of anything else.
    constants = {_constant(values, r) for r in returned}
    if len(constants) != 1 or None in constants:
        return None
    (constant,) = constants
    return constant[1], definition  # type: ignore[index]  # ``None in constants`` returned above


def _constant(values: Values, expr: cst.BaseExpression | None) -> tuple[str, Returned] | None:
    value = Value("none") if expr is None else values.single(expr)
    if value is None or value.kind not in ("bool", "none", "int", "float", "str"):
        return None
    return (value.kind, value.literal)


# --- checkpoint names ------------------------------------------------------------------------


@dataclass(frozen=True)
class PolicyName:
    name: str
    string: cst.SimpleString  # where the name is spelled
    node: cst.CSTNode  # where to report: the string, or the argument naming a constant (``*NAMES``)
    via: str | None  # the constant the name comes from
    factory: str
    role: NameRole


@dataclass(frozen=True)
class ImportedNames:
    """Checkpoint names a factory call spreads from another module's constant (``*KEEP`` for
    ``from .config import KEEP``): the project phase reads what it holds."""

    node: cst.Name  # the argument naming the constant
    qname: str  # as the module imports it
    factory: str
    role: NameRole


def _name_arguments(call: cst.Call, info: PolicyInfo) -> list[tuple[cst.Arg, NameRole]]:
    """The arguments of a name-based factory call that give checkpoint names, with what they do."""
    found: list[tuple[cst.Arg, NameRole]] = []
    for arg in call.args:
        if arg.star == "**":
            continue
        if arg.keyword is not None:
            role = _KEYWORD_ROLES.get(arg.keyword.value) if info.name == "save_and_offload_only_these_names" else None
        else:
            role = _VARARG_ROLES.get(info.name)
        if role is not None:
            found.append((arg, role))
    return found


def policy_names(values: Values, call: cst.Call, info: PolicyInfo) -> list[PolicyName]:
    """The literal checkpoint names a name-based factory call gets, resolving ``*NAMES`` and
    ``names_which_can_be_saved=NAMES`` by the value layer. One list or tuple as a positional
    argument is REM003's mistake (``save_only_these_names(("a", "b"))``): skipped."""
    found: list[PolicyName] = []
    for arg, role in _name_arguments(call, info):
        spread = arg.keyword is not None or arg.star
        value = arg.value
        single = None if spread else values.single(value)
        elements = values.elements(value) if spread else (single,) if single is not None else None
        via = value.value if isinstance(value, cst.Name) else None
        for element in elements or ():
            if (
                element.kind == "str"
                and isinstance(element.literal, str)
                and isinstance(element.node, cst.SimpleString)
            ):
                node = arg.value if via else element.node
                found.append(PolicyName(element.literal, element.node, node, via, info.name, role))
    return found


def imported_names(model: SemanticModel, call: cst.Call, info: PolicyInfo) -> list[ImportedNames]:
    """The arguments of a name-based factory call that spread a constant imported from elsewhere."""
    found: list[ImportedNames] = []
    for arg, role in _name_arguments(call, info):
        spread = arg.keyword is not None or arg.star
        binding = model.single_binding(arg.value) if spread and isinstance(arg.value, cst.Name) else None
        if binding is not None and binding.kind == "import" and binding.qname is not None:
            found.append(ImportedNames(arg.value, binding.qname, info.name, role))  # type: ignore[arg-type]  # a spread name-argument always has a role
    return found


@dataclass
class DeclaredNames:
    """What a module tells about checkpoint names: the names ``checkpoint_name`` declares, the
    patterns of names it builds at run time (``f"layer_{i}_out"``: ``layer_.*_out``), every other
    string literal (a name handed to a library: ``residual_checkpoint_name="context"``), and the
    expressions whose names cannot be known (a ``partial`` without a literal ``name=``,
    ``checkpoint_name`` passed on, a name from outside): the calls that take or pass them."""

    declared: set[str]
    strings: set[str]
    patterns: set[str] = field(default_factory=set)
    unknown: list[cst.CSTNode] = field(default_factory=list)


def declared_names(
    model: SemanticModel, names: CheckpointNames, exclude: set[int], mentions_checkpoint_name: bool = True
) -> DeclaredNames:
    """Read the module; ``exclude`` holds ids of string nodes that are policy names themselves.
    Without ``mentions_checkpoint_name`` (the word is not in the source) only strings are collected."""
    strings = (node.evaluated_value for node in model.strings if id(node) not in exclude)
    result = DeclaredNames(set(), {value for value in strings if isinstance(value, str)})
    called: set[int] = set()
    for call in model.calls:
        tagger = call.func
        if model.qualified_name(call.func) in PARTIAL and call.args and call.args[0].keyword is None:
            tagger = call.args[0].value  # partial(checkpoint_name, name="q"): declares "q" when it is a literal
            if not _is_checkpoint_name(model, tagger) or any(a.keyword is None for a in call.args[1:]):
                continue
        elif not _is_checkpoint_name(model, call.func):
            continue
        called.add(id(tagger))
        name = _name_argument(call)
        found = names.of(name) if name is not None else None
        if found is None:
            result.unknown.append(call)
        else:
            result.declared |= found.literals
            result.patterns |= found.patterns
    if mentions_checkpoint_name:  # ``checkpoint_name`` used as a value: passed on, or to a ``partial``
        for reference in (*model.names, *model.attributes):
            if id(reference) not in called and model.qualified_name(reference) in CHECKPOINT_NAME:
                result.unknown.append(
                    next((a for a in model.ancestors(reference) if isinstance(a, cst.Call)), reference)
                )
    return result


def _is_checkpoint_name(model: SemanticModel, func: cst.BaseExpression) -> bool:
    """``checkpoint_name`` by qualified name; an unresolved callee spelled ``checkpoint_name``
    (a project's re-export or wrapper) counts too, so its names are not taken as missing."""
    if model.qualified_name(func) in CHECKPOINT_NAME:
        return True
    spelled = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
    return spelled == "checkpoint_name" and model.qualified_name(func) is None


def _name_argument(call: cst.Call) -> cst.BaseExpression | None:
    if any(arg.star for arg in call.args):
        return None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "name":
            return arg.value
    positional = [arg for arg in call.args if arg.keyword is None]
    return positional[1].value if len(positional) > 1 else None


# The factories whose names select what is saved or offloaded (``save_anything_except_these_names``
# ignores its names: it saves everything).
NAMED_FACTORIES = frozenset({"save_only_these_names", "save_any_names_but_these", "save_and_offload_only_these_names"})


@dataclass(frozen=True)
class NamedCheckpoints:
    """A module's checkpoint names: those its name-based policies use, and what it declares."""

    uses: list[PolicyName]
    declared: DeclaredNames
    imported: list[ImportedNames] = field(default_factory=list)


def named_checkpoints(model: SemanticModel, values: Values, mentions_checkpoint_name: bool) -> NamedCheckpoints:
    uses: list[PolicyName] = []
    imported: list[ImportedNames] = []
    for call in model.calls:
        info = policy_info(model.qualified_name(call.func))
        if info is not None and info.kind == "factory" and info.name in NAMED_FACTORIES:
            uses.extend(policy_names(values, call, info))
            imported.extend(imported_names(model, call, info))
    declared = declared_names(
        model, CheckpointNames(model, values), {id(use.string) for use in uses}, mentions_checkpoint_name
    )
    return NamedCheckpoints(uses, declared, imported)
