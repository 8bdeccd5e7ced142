"""What ``static_argnums`` makes static, under each API's convention (measured, jax 0.10.2 / flax 0.12.8).

- ``jax.checkpoint``, ``jax.remat``, ``hk.remat``, ``nnx.remat``: index ``i`` is the ``i``-th positional
  argument of the call (``self`` included when a method is decorated). An int or a tuple of ints;
  a list is accepted when wrapping and raises ``TypeError`` at every call. An index outside
  ``[-len(args), len(args))`` raises ``ValueError`` at the call; a negative index counts from the
  last argument passed.
- ``nn.remat`` / ``nn.checkpoint`` count the Module (``self``, or a function's Module parameter) as
  index 0: Flax subtracts 1, then adds 2 for its own ``(variable_groups, rng_groups)`` arguments. So
  0 makes Flax's RNG groups static (nothing of the user's), -1 its variable groups, -2 the last
  argument, and a list reaches ``jax.remat`` as a list (``TypeError``).
- ``nn_partitioning.remat`` does not count the Module: index 0 is the first argument after it. It
  calls ``sorted(static_argnums)`` (an int raises ``TypeError: 'int' object is not iterable`` at
  init; a list works) and matches indices against ``enumerate(args)``, so negative and
  out-of-range indices are silently ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import libcst as cst

from remat_lint.analysis.bodies import CheckpointedFunction
from remat_lint.analysis.semantic import SemanticModel
from remat_lint.analysis.sites import RematSite
from remat_lint.analysis.values import Value, Values
from remat_lint.apis import policy_info

Form = Literal["absent", "int", "tuple", "list", "other"]
Convention = Literal["jax", "flax-self", "flax-no-self"]


@dataclass(frozen=True)
class StaticArgnums:
    """``static_argnums`` as written at a site."""

    arg: cst.Arg | None
    form: Form
    indices: tuple[int, ...] | None  # the literal indices; None when not literal

    @property
    def known(self) -> bool:
        return self.indices is not None


def static_argnums(site: RematSite, values: Values | None = None) -> StaticArgnums:
    """``static_argnums`` as written, or (with ``values``) as a constant it names holds
    (``STATIC = (2,)``, ``cfg.static_argnums`` of a local config class)."""
    arg = site.keyword("static_argnums")
    if arg is None and "static_argnums" in site.api.positional and not site.has_star_args:
        slot = site.api.positional.index("static_argnums")  # Flax linen takes it positionally too
        arg = site.positional[slot] if slot < len(site.positional) else None
    if arg is None:
        return StaticArgnums(None, "absent", ())
    value = arg.value
    if isinstance(value, (cst.Tuple, cst.List)):
        form: Form = "tuple" if isinstance(value, cst.Tuple) else "list"
        ints = [_int(e.value) if not isinstance(e, cst.StarredElement) else None for e in value.elements]
        known = tuple(i for i in ints if i is not None)
        return StaticArgnums(arg, form, known if len(known) == len(ints) else None)
    single = _int(value)
    if single is None and values is not None:
        return _held(arg, values.single(value))
    return StaticArgnums(arg, "int" if single is not None else "other", (single,) if single is not None else None)


def argument_names(values: Values, value: cst.BaseExpression) -> tuple[str, ...] | None:
    """The parameter names a ``static_argnames`` value certainly holds: a string, or a tuple or
    list of strings, spelled there or in a constant (``NAMES = ("mode",)``); None when not known."""
    held = values.single(value)
    items = held.items if held is not None and held.kind in ("tuple", "list") else (held,) if held is not None else None
    names = tuple(v.literal for v in items or () if v.kind == "str" and isinstance(v.literal, str))
    return names if items is not None and len(names) == len(items) else None


def _held(arg: cst.Arg, held: Value | None) -> StaticArgnums:
    """``static_argnums`` from the one value its expression certainly holds."""
    if held is not None and held.kind == "int" and isinstance(held.literal, int):
        return StaticArgnums(arg, "int", (held.literal,))
    if held is not None and held.kind in ("tuple", "list"):
        items = held.items or ()
        ints = tuple(i.literal for i in items if i.kind == "int" and isinstance(i.literal, int))
        return StaticArgnums(arg, held.kind, ints if held.items is not None and len(ints) == len(items) else None)
    return StaticArgnums(arg, "other", None)


def _int(node: cst.BaseExpression) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    if (
        isinstance(node, cst.UnaryOperation)
        and isinstance(node.operator, cst.Minus)
        and isinstance(node.expression, cst.Integer)
    ):
        return -int(node.expression.evaluated_value)
    return None


def convention(site: RematSite) -> Convention:
    if site.api.family != "flax":
        return "jax"
    return "flax-self" if site.api.self_counts_in_static_argnums else "flax-no-self"


@dataclass(frozen=True)
class Selection:
    """What one index selects."""

    index: int
    param: cst.Param | None  # the parameter made static; None when none certainly is
    # Why nothing (or something surprising) is selected:
    # "receiver": nn.remat index 0, the Module itself (Flax makes its RNG groups static);
    # "internal": nn.remat -1, or a negative index past the first argument (Flax's variable or RNG groups);
    # "out-of-range": beyond the parameters (jax, nn.remat: ValueError at call; nn_partitioning: ignored);
    # "negative-ignored": nn_partitioning ignores negative indices;
    # "shifted": a negative nn.remat index, which Flax shifts by one;
    # "unknown": depends on how many arguments each call passes.
    issue: Literal["receiver", "internal", "out-of-range", "negative-ignored", "shifted", "unknown"] | None = None


def select(site: RematSite, fn: CheckpointedFunction, index: int) -> Selection:
    """The parameter of ``fn`` that ``static_argnums`` index ``index`` makes static at ``site``."""
    args = fn.args
    rule = convention(site)
    if rule == "flax-no-self":
        if index < 0:
            return Selection(index, None, "negative-ignored")
        return Selection(index, args[index] if index < len(args) else None, None if index < len(args) else _beyond(fn))
    if rule == "flax-self":
        if index == 0:
            return Selection(index, None, "receiver")
        if index == -1:
            return Selection(index, None, "internal")
        if index < 0:
            shifted = _from_end(fn, index + 1)
            if shifted.issue == "out-of-range" and -(index + 1) <= len(fn.args) + 2:
                return Selection(index, None, "internal")  # lands on Flax's variable or RNG groups
            return Selection(index, shifted.param, "shifted" if shifted.param is not None else shifted.issue)
        index_in_args = index - 1
        if index_in_args < len(args):
            return Selection(index, args[index_in_args])
        return Selection(index, None, _beyond(fn))
    if index < 0:
        return _from_end(fn, index)
    return Selection(index, args[index], None) if index < len(args) else Selection(index, None, _beyond(fn))


def _beyond(fn: CheckpointedFunction) -> Literal["out-of-range", "unknown"]:
    """Past the last parameter: certainly no argument there, unless ``*args`` takes more."""
    return "unknown" if fn.star_args else "out-of-range"


def _from_end(fn: CheckpointedFunction, index: int) -> Selection:
    """A negative index counts from the last argument passed: certain only when every positional
    parameter must be passed (no defaults, no ``*args``); past the first parameter whatever the
    call passes when there is no ``*args``."""
    args = fn.args
    if fn.star_args:
        return Selection(index, None, "unknown")
    if -index > len(args):
        return Selection(index, None, "out-of-range")
    if any(p.default is not None for p in args):
        return Selection(index, None, "unknown")
    return Selection(index, args[index])


def static_params(site: RematSite, fn: CheckpointedFunction, values: Values | None = None) -> frozenset[str] | None:
    """The names of ``fn``'s parameters that are certainly static (never traced): those
    ``static_argnums`` selects and those ``functools.partial`` binds. None when unknown
    (``static_argnums`` not known, an index that depends on the call)."""
    written = static_argnums(site, values)
    if written.indices is None or site.has_star_args or fails_before_tracing(site, written):
        return None
    names = set(fn.bound)
    for index in written.indices:
        selection = select(site, fn, index)
        if selection.issue == "unknown" or (selection.issue == "out-of-range" and convention(site) != "flax-no-self"):
            return None  # depends on the call, or the call raises ValueError before tracing
        if selection.param is not None:
            names.add(selection.param.name.value)
    return frozenset(names)


def fails_at_wrap(model: SemanticModel, site: RematSite) -> bool:
    """The remat call raises before anything is traced (REM002): an unknown keyword, more
    positional arguments than the API takes, or a policy in another of Flax's positional slots
    (``nn.remat(Block, policy)`` passes it as ``variables``: ``InvalidFilterError``)."""
    api = site.api
    if any(name not in api.keywords for name in site.keywords):
        return True
    if site.has_star_args:
        return False
    if len(site.positional) > len(api.positional):
        return True
    for slot, arg in zip(api.positional, site.positional, strict=False):
        value = arg.value.func if isinstance(arg.value, cst.Call) else arg.value
        if slot != "policy" and policy_info(model.qualified_name(value)) is not None:
            return True
    return False


def fails_before_tracing(site: RematSite, written: StaticArgnums) -> bool:
    """The form itself makes every call (or ``init``) raise ``TypeError`` before the function is
    traced: a list (except on ``nn_partitioning.remat``), an int on ``nn_partitioning.remat``."""
    no_self = convention(site) == "flax-no-self"
    return (written.form == "list" and not no_self) or (written.form == "int" and no_self)


def index_of(site: RematSite, fn: CheckpointedFunction, param: cst.Param) -> int | None:
    """The ``static_argnums`` index that selects ``param`` at ``site`` (for messages and fixes)."""
    if param not in fn.args:
        return None
    position = fn.args.index(param)
    return position + 1 if convention(site) == "flax-self" else position
