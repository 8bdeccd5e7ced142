"""Calls of a Module class that a Flax remat lifts from an instance of another module's class
(``nn.remat(block.__class__)``, ``nn.remat(type(block))`` after ``block = Block(...)`` with
``Block`` imported): what each call passes, as plain data, for the project phase to judge against
the class's ``__call__`` (REM202 across modules).

Only remats without static arguments are read (every argument is then traced); an argument
written ``None`` is left out (no tracer), and so are keywords when the remat drops them
(``nn_partitioning.remat``, REM016).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from remat_lint.analysis.semantic import SemanticModel
from remat_lint.analysis.sites import RematSite
from remat_lint.analysis.static_args import convention
from remat_lint.analysis.tracing import invocations
from remat_lint.analysis.values import Values, deferred


@dataclass(frozen=True)
class LiftedCall:
    """A call of an instance of the lifted class: the traced arguments it passes."""

    call: cst.Call
    site: RematSite
    construction: cst.Call  # ``Block(...)``: names the class as this module imports it
    positional: tuple[int, ...]  # positions (after the Module) of the traced positional arguments
    keywords: tuple[str, ...]  # names of the traced keyword arguments
    self_counts: bool  # ``static_argnums`` counts the Module as argument 0


def lifted_calls(model: SemanticModel, sites: list[RematSite]) -> Iterator[LiftedCall]:
    """The calls (without ``*``/``**``) of every class of another module that a site lifts."""
    values = Values(model, imported=deferred)
    for site in sites:
        construction = _imported_class(values, site)
        if construction is None:
            continue
        keywords = convention(site) != "flax-no-self"  # nn_partitioning.remat drops keywords (REM016)
        for call in invocations(model, site):
            if any(a.star for a in call.args):
                continue
            yield LiftedCall(
                call,
                site,
                construction,
                tuple(i for i, a in enumerate(call.args) if a.keyword is None and not _is_none(a.value)),
                tuple(a.keyword.value for a in call.args if a.keyword and keywords and not _is_none(a.value)),
                convention(site) == "flax-self",
            )


def _imported_class(values: Values, site: RematSite) -> cst.Call | None:
    """The construction of the instance whose class a Flax remat without static arguments lifts,
    when that class is imported from another module of the project (the value layer's Module class
    of framework None)."""
    if site.api.family != "flax" or site.form != "call" or site.target is None:
        return None
    if site.keyword("static_argnums") is not None or site.keyword("static_argnames") is not None:
        return None  # what is static is judged in this module's own terms (REM011, REM012)
    classes = values.possible(site.target)
    if not classes or len(classes) != 1 or classes[0].kind != "module_class" or classes[0].framework is not None:
        return None
    return classes[0].node if isinstance(classes[0].node, cst.Call) else None


def _is_none(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Name) and value.value == "None"
