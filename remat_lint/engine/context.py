"""What a rule sees of the file being linted: the tree and the analyses, each built on first use."""

from __future__ import annotations

import ast
from functools import cached_property

import libcst as cst

from remat_lint.analysis.bodies import Bodies
from remat_lint.analysis.callables import Callables
from remat_lint.analysis.differentiation import Differentiations
from remat_lint.analysis.loops import Loops
from remat_lint.analysis.policies import NamedCheckpoints, named_checkpoints
from remat_lint.analysis.semantic import SemanticModel
from remat_lint.analysis.sites import RematSite, find_sites
from remat_lint.analysis.values import Values
from remat_lint.engine.positions import Positions
from remat_lint.rule import RawFinding


class LintContext:
    def __init__(
        self, path: str, source: str, module: cst.Module, is_test_file: bool = False, tree: ast.Module | None = None
    ) -> None:
        self.path = path
        self.source = source
        self.module = module
        self.is_test_file = is_test_file
        self.tree = tree  # the file's ``ast``, when parsed: positions are then computed per statement
        self.raw_findings: list[RawFinding] = []

    @cached_property
    def model(self) -> SemanticModel:
        return SemanticModel(self.module)

    @cached_property
    def sites(self) -> list[RematSite]:
        return find_sites(self.model, self.values.entries)

    @cached_property
    def bodies(self) -> Bodies:
        """The checkpointed functions and the same-module code they call."""
        return Bodies(self.model, self.sites)

    @cached_property
    def callables(self) -> Callables:
        """What callable expressions denote: checkpoint sites and functions, flow-sensitively."""
        return Callables(self.model, self.sites)

    @cached_property
    def differentiations(self) -> Differentiations:
        """Every ``grad``/``value_and_grad``/``vjp``/... application and what it differentiates."""
        return Differentiations(self.model, self.callables)

    @cached_property
    def loops(self) -> Loops:
        """Loop (scan, fori_loop, map...) and vmap bodies."""
        return Loops(self.model, self.callables)

    @cached_property
    def values(self) -> Values:
        """What expressions can hold: literals, constants, lookups, helpers, config fields, flags."""
        return Values(self.model)

    @cached_property
    def named_checkpoints(self) -> NamedCheckpoints:
        """The checkpoint names the name-based policies use, and those ``checkpoint_name`` declares."""
        return named_checkpoints(self.model, self.values, "checkpoint_name" in self.source)

    @cached_property
    def positions(self) -> Positions:
        """Where nodes are: findings, and facts that name a place (``train.py:14``)."""
        return Positions(self.module, self.source, self.model.parents, self.tree)

    def qualified_name(self, expr: cst.CSTNode) -> str | None:
        return self.model.qualified_name(expr)

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    @cached_property
    def _module_imports(self) -> list[tuple[str, str]]:
        """(name, qualified name) of each module-level name bound once, by an import: a module's
        other bindings can be many (one per generated wrapper), its imports are few."""
        return [
            (name, bindings[0].qname)
            for name, bindings in self.model.module_scope.bindings.items()
            if len(bindings) == 1 and bindings[0].kind == "import" and bindings[0].qname
        ]

    def spell(self, qname: str) -> tuple[str, str | None]:
        """How to write ``qname`` in this module: through an existing module-level import when one
        covers it (``cp.dots_saveable`` after ``from jax import checkpoint_policies as cp``), else
        fully qualified, with the top-level module to import (``jax``) or None if already imported."""
        best: str | None = None
        for name, bound in self._module_imports:
            if qname == bound or qname.startswith(bound + "."):
                spelled = name + qname[len(bound) :]
                if best is None or len(spelled) < len(best):
                    best = spelled
        if best is not None:
            return best, None
        return qname, qname.split(".", 1)[0]
