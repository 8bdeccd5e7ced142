"""Layers that test a flag in Python, and where the layer a call applies was built.

Flax linen, Flax NNX and Equinox layers test their mode flag with ``if`` (measured, flax 0.12.8,
equinox 0.13.8): ``nn.Dropout`` / ``nnx.Dropout`` run ``if (rate == 0.0) or deterministic``,
``eqx.nn.Dropout`` runs ``if inference`` after setting it for ``p == 0``; ``nn.BatchNorm`` /
``nnx.BatchNorm`` test ``use_running_average``, ``eqx.nn.BatchNorm`` ``inference``, Haiku's
``hk.BatchNorm`` ``is_training`` (dm-haiku 0.0.17); linen and NNX
attention test ``deterministic`` when their dropout rate is nonzero. A traced flag there raises
``TracerBoolConversionError``.

The layer a call applies (``layer_of``) is found where it was built: in the call itself
(``nn.Dropout(0.1)(x, deterministic=p)``), through a name bound to the construction
(``drop = eqx.nn.Dropout(0.1)`` at module level), or through ``self.<attr>`` written once in the
class's methods (``self.dropout = nnx.Dropout(0.1, rngs=rngs)`` in ``__init__``, or in ``setup``):
the value layer's Module instance (``values.Values``).

A rate held in a field of the Module (``nn.Dropout(self.dropout_rate)``) is followed when asked
(``fields``): it is nonzero when its default and every value this module's constructions give it
are (``module_fields``); the layer then names the field, for the project to confirm the others'.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import libcst as cst

from remat_lint.analysis.module_fields import HeldField, field_values, held_field
from remat_lint.analysis.values import Values
from remat_lint.apis import FLAG_LAYERS, FlagLayer


class _Held(Protocol):
    """A value as the value layer (``Value``) or the project (``Constant``) gives it."""

    @property
    def kind(self) -> str: ...
    @property
    def literal(self) -> object: ...


@dataclass(frozen=True)
class AppliedLayer:
    construction: cst.Call  # where the layer was built
    name: str  # the layer's class name, for messages (``Dropout``)
    spec: FlagLayer
    # The Module field its rate is read from (``self.dropout_rate``): nonzero as far as this
    # module tells, which the other modules' constructions of the Module must confirm.
    field: HeldField | None = None


def layer_of(values: Values, call: cst.Call, fields: bool = False) -> AppliedLayer | None:
    """The flag-testing layer that ``call`` builds (``nn.Dropout(0.1, deterministic=p)``) or applies,
    when its rate is certainly nonzero (``fields``: also a rate held in a field of the Module)."""
    model = values.model
    construction = construction_of(values, call.func) or call
    qname = model.qualified_name(construction.func) or ""
    spec = FLAG_LAYERS.get(qname)
    if spec is None:
        return None
    rate = _rate_argument(construction, spec)
    held = held_field(model, rate) if fields and rate is not None else None
    if held is not None:
        if not nonzero(field_values(model, values, held)):
            return None
    elif not _nonzero_rate(values, construction, spec, rate):
        return None
    return AppliedLayer(construction, qname.rsplit(".", 1)[-1], spec, held)


def construction_of(values: Values, func: cst.BaseExpression) -> cst.Call | None:
    """The call that built the layer ``func`` is: itself, or the constructor call of the one
    Module instance the value layer finds (a name bound to it, ``self.<attr>``, a list's element)."""
    if isinstance(func, cst.Call):
        return func
    built = values.single(func)
    return (
        built.node
        if built is not None and built.kind == "module_instance" and isinstance(built.node, cst.Call)
        else None
    )


def flag_argument(call: cst.Call, layer: AppliedLayer) -> cst.BaseExpression | None:
    """The flag ``call`` gives the layer: a keyword (or its position) of the applying call, or the
    constructor's field when ``call`` is the construction."""
    spec = layer.spec
    applying = call is not layer.construction
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in (spec.flag, spec.also):
            return arg.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if applying and spec.flag_position is not None and spec.flag_position < len(positional):
        return positional[spec.flag_position].value
    return None


def _rate_argument(construction: cst.Call, spec: FlagLayer) -> cst.BaseExpression | None:
    """The rate the construction passes, by keyword or position."""
    if spec.rate is None:
        return None
    rate = next((a.value for a in construction.args if a.keyword is not None and a.keyword.value == spec.rate), None)
    positional = [a for a in construction.args if a.keyword is None and not a.star]
    if rate is None and spec.rate_position is not None and spec.rate_position < len(positional):
        rate = positional[spec.rate_position].value
    return rate


def _nonzero_rate(values: Values, construction: cst.Call, spec: FlagLayer, rate: cst.BaseExpression | None) -> bool:
    """The layer's rate is certainly nonzero: every value the value layer finds for it (a literal,
    a module constant ``DROPOUT = 0.1``) is a nonzero number, or it is left at a nonzero default."""
    if spec.rate is None:
        return True
    if rate is None:
        if any(a.star for a in construction.args):
            return False
        return spec.default_rate is not None and spec.default_rate != 0.0
    # Imported names stay unknown here (no project callback): only what this module certainly holds.
    return nonzero(values.possible(rate))


def nonzero(held: Sequence[_Held] | None) -> bool:
    """Every value is a nonzero number (and there is one)."""
    return bool(held) and all(v.kind in ("int", "float") and v.literal not in (None, 0) for v in held or ())
