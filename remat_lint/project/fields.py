"""What a Module field can hold across the project: its module's part (analysis/module_fields.py)
joined with every other module's constructions of the class (``ModuleSummary.keyword_values``,
``imported_uses``) and its subclasses."""

from __future__ import annotations

from typing import TYPE_CHECKING

from remat_lint.project.modules import Ref
from remat_lint.project.summary import OPAQUE, Constant

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
    symbols = {(module.name, name) for name in names}
    dotted = f"{module.name}.{names[0]}"
    found: list[Constant] = []
    for other in project.by_path.values():
        uses = [positional for ref, positional in other.summary.imported_uses if _may_be(project, other, ref, symbols)]
        if any(positional == OPAQUE or positional > position for positional in uses):
            return None
        if any(dotted in project.base_names((other.name, cls)) for cls in other.summary.bases):
            return None
        passed = other.summary.keyword_values.get(field, ()) if uses else ()  # a module naming the class
        resolved = project.values(other, passed) if passed is not None else None
        if resolved is None:
            return None
        found += resolved[0]
    return tuple(found)


def _may_be(project: Project, module: ProjectModule, ref: Ref, symbols: set[tuple[str, str]]) -> bool:
    """``ref``, as ``module`` imports it, is one of ``symbols``, or may be (unresolved, same name)."""
    found = project.resolve(module, ref)
    return found in symbols if found is not None else any(ref[1].rsplit(".", 1)[-1] == s[1] for s in symbols)
