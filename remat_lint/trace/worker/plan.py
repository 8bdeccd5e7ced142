"""Where findings live in a module, read with ``ast`` (no JAX): the module-level definitions that own
each line, and the functions worth tracing when no target is configured.

A target "covers" a finding when tracing it executes code of the definition that owns the finding
(the worker records executed lines); for a module-level statement such as
``block = jax.checkpoint(_block, policy="x")`` the owners are the definitions the statement names.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from remat_lint.apis import DIFF_APIS

# The last names of the differentiation APIs, and jax.linearize (forward mode, not one the rules judge).
GRAD_NAMES = frozenset(qname.rsplit(".", 1)[1] for qname in DIFF_APIS) | {"linearize"}


@dataclass
class Definition:
    name: str
    start: int  # first decorator line
    end: int
    kind: str  # "function" or "class"
    params: list[str] = field(default_factory=list)  # required positional parameters (functions)
    refs: frozenset[str] = frozenset()  # names it mentions
    differentiates: bool = False  # calls jax.grad & co. itself (a train step): trace it as written


@dataclass
class ModulePlan:
    definitions: dict[str, Definition]
    statements: list[tuple[int, int, frozenset[str], frozenset[str]]]  # other statements: range, names used, bound

    def owners(self, start: int, end: int) -> list[Definition]:
        """The definitions whose code a target must execute to reach lines ``start..end``."""
        inside = [d for d in self.definitions.values() if d.start <= start and end <= d.end]
        if inside:
            return inside
        for first, last, refs, bound in self.statements:
            if first <= start <= last:
                # ``block = checkpoint(_block)`` reaches ``_block``; ``POLICY = ...`` reaches its users.
                named = [self.definitions[name] for name in sorted(refs) if name in self.definitions]
                return named + [d for d in self.definitions.values() if d.refs & bound and d not in named]
        return []

    def callers(self, names: set[str]) -> list[Definition]:
        """Definitions that reach any of ``names`` through same-module references, nearest first."""
        order: list[Definition] = []
        frontier = set(names)
        seen = set(names)
        while frontier:
            layer = [d for d in self.definitions.values() if d.name not in seen and d.refs & frontier]
            order.extend(sorted(layer, key=lambda d: d.start))
            frontier = {d.name for d in layer}
            seen |= frontier
        return order


def plan_module(source: str) -> ModulePlan:
    tree = ast.parse(source)
    definitions: dict[str, Definition] = {}
    statements = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            refs = _names(node)
            if isinstance(node, ast.ClassDef):
                definitions[node.name] = Definition(node.name, start, node.end_lineno or start, "class", refs=refs)
            else:
                args = node.args
                positional = [*args.posonlyargs, *args.args]
                required = positional[: len(positional) - len(args.defaults)]
                definitions[node.name] = Definition(
                    node.name,
                    start,
                    node.end_lineno or start,
                    "function",
                    params=[a.arg for a in required],
                    refs=refs,
                    differentiates=bool(refs & GRAD_NAMES),
                )
        else:
            bound = frozenset(
                t.id
                for sub in ast.walk(node)
                if isinstance(sub, (ast.Assign, ast.AnnAssign, ast.AugAssign))
                for t in (sub.targets if isinstance(sub, ast.Assign) else [sub.target])
                if isinstance(t, ast.Name)
            )
            statements.append((node.lineno, node.end_lineno or node.lineno, _names(node) - bound, bound))
    # A name bound by a module-level statement (``block = jax.checkpoint(_block)``) refers onwards to
    # what the statement names, so callers of ``block`` reach ``_block``.
    aliases: dict[str, frozenset[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    aliases[target.id] = _names(node.value)
    for d in definitions.values():
        d.refs = d.refs | frozenset(n for ref in d.refs for n in aliases.get(ref, ()))
    return ModulePlan(definitions, statements)


def _names(node: ast.AST) -> frozenset[str]:
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            found.add(sub.attr)
    return frozenset(found)
