"""A value that only the project can tell, carried to the project phase as plain data: what an
argument holds when some of it is another module's name (``from .config import POLICY``) or a
field of any instance of a config class, which every construction in the project may set
(``cfg.policy`` for ``cfg: Config``). The project resolves it (``project.deferred.resolve``)."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from remat_lint.analysis.values import Values
from remat_lint.project.summary import DEFERRED_KINDS, Constant


@dataclass(frozen=True)
class Deferred:
    values: list[Constant]  # every value the expression can hold, placeholders among them
    known: list[Constant]  # those that are no placeholder
    symbols: list[str]  # the names the files that tell spell (the runner reads those files)


def deferred_value(values: Values, expr: cst.BaseExpression) -> Deferred | None:
    """What ``expr`` holds (``values``' imported names deferred), when some of it only the project
    can tell and the rest is known."""
    possible = values.deferred_imports.possible(expr)
    if not possible or not any(v.kind in DEFERRED_KINDS for v in possible):
        return None
    constants = [Constant(v.kind, v.literal, v.qname) for v in possible]
    # A field's class too: a file that constructs it names the class, maybe not the field.
    symbols = {name for v in possible if v.kind in DEFERRED_KINDS for name in _spelled(v.kind, v.qname or "")}
    return Deferred(constants, [c for c in constants if c.kind not in DEFERRED_KINDS], sorted(symbols))


def _spelled(kind: str, qname: str) -> list[str]:
    parts = qname.split(".")
    return parts[-2:] if kind.endswith("field") else parts[-1:]
