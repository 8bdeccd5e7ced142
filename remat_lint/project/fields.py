"""What a field of a class can hold across the project: its module's part (analysis/module_fields.py
for a Module's ``self.<field>``; ``ModuleSummary.config_fields`` and ``constructed`` for a config
class's ``cfg.<field>``) joined with every other module's constructions of the class
(``ModuleSummary.keyword_values``, ``imported_uses``) and its subclasses."""

from __future__ import annotations

from typing import TYPE_CHECKING

from remat_lint.project.modules import Ref
from remat_lint.project.summary import OPAQUE, Constant, Constants

if TYPE_CHECKING:
    from remat_lint.project.model import Project, ProjectModule


def field_values(
    project: Project, module: ProjectModule, names: tuple[str, ...], field: str, position: int
) -> tuple[Constant, ...] | None:
    """What the other modules may set ``field`` of the class ``names[0]`` of ``module`` to (its
    remat wraps bound to ``names[1:]``): every value a call passes as ``field=`` in a module that
    imports the class or a wrap (one that does not can only get it passed on: opaque there); None
    when one is unknown, when one constructs the class with more than ``position`` positional
    arguments or uses it otherwise (passed on, wrapped, spread), or when a class derives from it
    (it may declare another default). An import the project does not resolve (no project root
    names the modules as imported) may be the class when it ends with one of ``names``."""
    found = _passed(project, module, names, field, position, anywhere=False)
    return found[0] if found is not None else None


def instance_values(project: Project, owner: ProjectModule, cls: str, field: str) -> Constants | None:
    """What ``field`` of any instance of the config class ``cls`` of ``owner`` can hold: the
    values the constructions in the project leave it at (its default, or what a call passes as
    ``field=``), when each use of the class is known and one constructs it; else what its
    annotation allows (``Literal[...]``, ``str``); None when neither tells. A config object is
    handed on, and a copy (``dataclasses.replace(cfg, field=...)``) needs no import of its class:
    every module's copies count."""
    declared = owner.summary.config_fields.get(cls, {}).get(field)
    if declared is None:
        return None
    arity = owner.summary.constructed.get(cls)
    if declared.default is None or arity is None or arity > declared.position:
        return declared.bounded
    found = _passed(project, owner, (cls,), field, declared.position, anywhere=True)
    if found is None or not (arity >= 0 or found[1]):
        return declared.bounded  # unknown, or built only outside the project
    return (*declared.default, *found[0])


def _passed(
    project: Project, module: ProjectModule, names: tuple[str, ...], field: str, position: int, *, anywhere: bool
) -> tuple[Constants, bool] | None:
    """``field_values``, and whether another module constructs the class; ``anywhere``: the
    values ``module`` and every module's copies pass as ``field=`` count too
    (``ModuleSummary.copied_values``)."""
    symbols = {(module.name, name) for name in names}
    dotted = f"{module.name}.{names[0]}"
    found: list[Constant] = []
    constructed = False
    for other in project.by_path.values():
        uses = [positional for ref, positional in other.summary.imported_uses if _may_be(project, other, ref, symbols)]
        if any(positional == OPAQUE or positional > position for positional in uses):
            return None
        if any(dotted in project.base_names((other.name, cls)) for cls in other.summary.bases):
            return None
        constructed = constructed or any(positional >= 0 for positional in uses)
        naming = uses or (anywhere and other is module)  # its own module constructs it too
        passed = other.summary.keyword_values.get(field, ()) if naming else ()
        copied = other.summary.copied_values.get(field, ()) if anywhere else ()
        resolved = project.values(other, (*passed, *copied)) if passed is not None and copied is not None else None
        if resolved is None:
            return None
        found += resolved[0]
    return tuple(found), constructed


def _may_be(project: Project, module: ProjectModule, ref: Ref, symbols: set[tuple[str, str]]) -> bool:
    """``ref``, as ``module`` imports it, is one of ``symbols``, or may be (unresolved, same name)."""
    found = project.resolve(module, ref)
    return found in symbols if found is not None else any(ref[1].rsplit(".", 1)[-1] == s[1] for s in symbols)
