"""Calls of a class of another module of the project that a Flax remat lifts (``nn.remat(Block)``
with ``Block`` imported, or the class of an instance of it: ``nn.remat(block.__class__)``,
``nn.remat(type(block))`` after ``block = Block(...)``): what each call of the lifted class's
instances passes, as plain data, for the project phase to judge against the class's ``__call__``
(REM202 across modules). Whether the imported name is a linen Module class at all is the
project's to tell.

Only remats without static arguments are read (every argument is then traced); an argument
written ``None`` is left out (no tracer), and so are keywords when the remat drops them
(``nn_partitioning.remat``, REM016).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from remat_lint.analysis.sites import RematSite
from remat_lint.analysis.static_args import convention
from remat_lint.analysis.tracing import calls_of
from remat_lint.analysis.values import Values


@dataclass(frozen=True)
class LiftedCall:
    """A call of an instance of the lifted class: the traced arguments it passes."""

    call: cst.Call
    site: RematSite
    cls: cst.BaseExpression  # the class as this module names it (``Block``, from ``Block(...)`` too)
    positional: tuple[int, ...]  # positions (after the Module) of the traced positional arguments
    keywords: tuple[str, ...]  # names of the traced keyword arguments
    self_counts: bool  # ``static_argnums`` counts the Module as argument 0


def lifted_calls(values: Values, sites: list[RematSite]) -> Iterator[LiftedCall]:
    """The calls (without ``*``/``**``) of the instances of every class of another module that a
    site lifts: ``nn.remat(Block)(cfg)(x, ...)``, through names and ``self.<attr>`` (``calls_of``)."""
    model, deferring = values.model, values.deferred_imports
    for site in sites:
        cls = _imported_class(deferring, site)
        if cls is None or site.call is None:
            continue
        keywords = convention(site) != "flax-no-self"  # nn_partitioning.remat drops keywords (REM016)
        for call in (c for instance in calls_of(model, site.call) for c in calls_of(model, instance)):
            if any(a.star for a in call.args):
                continue
            yield LiftedCall(
                call,
                site,
                cls,
                tuple(i for i, a in enumerate(call.args) if a.keyword is None and not _is_none(a.value)),
                tuple(a.keyword.value for a in call.args if a.keyword and keywords and not _is_none(a.value)),
                convention(site) == "flax-self",
            )


def _imported_class(values: Values, site: RematSite) -> cst.BaseExpression | None:
    """How this module names the class that a Flax remat without static arguments lifts, when it
    is imported from another module of the project: the target itself (an imported name), or the
    callee that built the instance whose class it is (the value layer's Module class of framework
    None)."""
    if site.api.family != "flax" or site.form != "call" or site.target is None:
        return None
    if site.keyword("static_argnums") is not None or site.keyword("static_argnames") is not None:
        return None  # what is static is judged in this module's own terms (REM011, REM012)
    found = values.possible(site.target)
    value = found[0] if found and len(found) == 1 else None
    if value is not None and value.kind == "imported" and isinstance(site.target, (cst.Name, cst.Attribute)):
        return site.target
    if value is not None and value.kind == "module_class" and value.framework is None:
        return value.node.func if isinstance(value.node, cst.Call) else None
    return None


def _is_none(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Name) and value.value == "None"
