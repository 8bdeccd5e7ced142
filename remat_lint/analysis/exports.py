"""The checkpoints other modules can import under a name."""

from __future__ import annotations

import libcst as cst

from remat_lint.analysis.semantic import SemanticModel
from remat_lint.analysis.sites import RematSite


def exported_name(model: SemanticModel, site: RematSite, *, conditional: bool = False) -> str | None:
    """The module-level name, bound once, that holds ``site``'s result: ``@jax.checkpoint def loss``
    (the outermost decorator) or ``R = nn.remat(Block)``; None otherwise. ``conditional``: also
    ``R = nn.remat(Block) if REMAT else Block``, which holds it where configuration turns it on."""
    if site.form == "decorator" and isinstance(site.target, cst.FunctionDef):
        name = site.target.name.value if site.target.decorators[0] is site.node else None
        statement: cst.CSTNode | None = site.target
    else:
        value: cst.CSTNode = site.node
        statement = model.parent(site.node)
        if conditional and isinstance(statement, cst.IfExp) and value in (statement.body, statement.orelse):
            value, statement = statement, model.parent(statement)
        targets = statement.targets if isinstance(statement, cst.Assign) and statement.value is value else ()
        name = targets[0].target.value if len(targets) == 1 and isinstance(targets[0].target, cst.Name) else None
    if not name or len(model.module_scope.bindings.get(name, ())) != 1:
        return None
    return name if statement is not None and at_module_level(model, statement) else None


def at_module_level(model: SemanticModel, statement: cst.CSTNode) -> bool:
    """``statement`` (a def or an assignment) runs at module level, not in a def or class."""
    return not any(isinstance(a, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) for a in model.ancestors(statement))
