"""The project phase's side of ``analysis.deferred``: a deferred value resolved, with the modules
that told it, as a finding names them."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from remat_lint.findings import RelatedLocation
from remat_lint.project.summary import DEFERRED_KINDS, Constant, Constants

if TYPE_CHECKING:
    from remat_lint.project.model import Project, ProjectModule


@dataclass(frozen=True)
class Resolved:
    values: Constants
    where: str  # the other modules that told, relative to the module of the finding: ``config.py``
    related: tuple[RelatedLocation, ...]  # where each name the placeholders read is defined there

    @property
    def source(self) -> str:
        """`` (from config.py)`` for a message; empty when the finding's module alone told."""
        return f" (from {self.where})" if self.where else ""


def resolve(project: Project, module: ProjectModule, values: Sequence[Constant]) -> Resolved | None:
    """``values`` (as ``module`` wrote them) with every placeholder replaced by what it holds;
    None when one is unknown."""
    found = project.values(module, tuple(values))
    if found is None:
        return None
    others = {os.path.relpath(m.path, os.path.dirname(module.path)) for m in found[1] if m is not module}
    where = ", ".join(sorted(others))
    names = sorted({(v.qname or "").rsplit(".", 1)[-1] for v in values if v.kind in DEFERRED_KINDS})
    defined = (project.definition((m.name, name), f"`{name}` is defined here") for m in found[1] for name in names)
    return Resolved(found[0], where, tuple(dict.fromkeys(d for d in defined if d is not None)))
