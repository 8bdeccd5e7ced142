"""The project: every module's summary and facts under its dotted name, with import resolution
(absolute, relative, ``__init__`` re-exports, aliases, ``from pkg import module``) and a call
graph of bounded depth between the modules' top-level functions."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

from remat_lint.apis import LINEN_MODULE_CLASSES
from remat_lint.findings import Candidate, Finding, Position, RelatedLocation
from remat_lint.project.fields import instance_values
from remat_lint.project.modules import LOCAL, Ref, absolute, import_ref, is_package, module_names
from remat_lint.project.summary import (
    DEFERRED_KINDS,
    Constant,
    Constants,
    Differentiated,
    ImportedCall,
    ModuleSummary,
    Signature,
    TableEntry,
)

Symbol = tuple[str, str]  # (module, top-level name)
_MAX_REEXPORTS = 8
CALL_DEPTH = 3  # calls followed from a function to the checkpoint it reaches


@dataclass
class ProjectModule:
    name: str
    path: str
    summary: ModuleSummary
    facts: dict[str, Any] = field(default_factory=dict)  # rule code -> that rule's facts

    @property
    def package(self) -> bool:
        return is_package(self.path)


@dataclass(frozen=True)
class Reach:
    """A differentiation (in ``module``) that reaches a function of another module."""

    module: ProjectModule
    differentiation: Differentiated
    # The functions from the differentiated one to the reached one, which is not among them;
    # empty when the reached function is the differentiated one.
    path: tuple[str, ...]
    after: tuple[str, ...]  # the cheap work after the reached function's result, up to the differentiated one's return
    whole: bool  # the differentiated function is the reached one, or only returns its call (through one-line wrappers)

    def rank(self, worst_first: tuple[str, ...]) -> tuple[int, str, int]:
        """The worst transform first (``kind`` in ``worst_first``), then by place."""
        return worst_first.index(self.differentiation.kind), self.module.path, self.differentiation.row


class Project:
    def __init__(self, root: str | None) -> None:
        self.root = root
        self.modules: dict[str, ProjectModule] = {}
        self.by_path: dict[str, ProjectModule] = {}
        self._loop_bodies: set[Symbol] | None = None  # computed once, for every file's project phase
        self._reached: dict[Symbol, list[Reach]] | None = None  # the same
        self.unsaved: Mapping[str, str] = {}  # real path -> text read instead of the file's (engine/unsaved.py)
        self._ambiguous: set[str] = set()  # module names two files claim (``add``)

    def add(self, path: str, summary: ModuleSummary, facts: dict[str, Any]) -> None:
        """Index a file; outside the root (or without one) it is named from the folder above its
        package (``pkg/cfg.py`` in a folder with an ``__init__.py`` is ``pkg.cfg``), the way
        Python imports it; a file outside any package is a top-level module, the way a script
        next to its modules imports them. A name two files claim names neither: which one an
        import reaches is unknown."""
        relpath = os.path.relpath(path, self.root) if self.root else ""
        names = module_names(_package_path(path) if not relpath or relpath.startswith("..") else relpath)
        if not names:
            return
        module = ProjectModule(names[0], path, summary, facts)
        for name in names:
            claimed = self.modules.setdefault(name, module)
            if claimed is not module and os.path.realpath(claimed.path) != os.path.realpath(path):
                self._ambiguous.add(name)
        self.by_path[os.path.realpath(path)] = module
        self._loop_bodies = self._reached = None

    def module_of(self, path: str) -> ProjectModule | None:
        return self.by_path.get(os.path.realpath(path))

    def text(self, module: ProjectModule) -> str:
        """The text ``module`` was linted from: its unsaved text, or its file read again ("" when unreadable)."""
        real = os.path.realpath(module.path)
        if real in self.unsaved:
            return self.unsaved[real]
        from remat_lint.engine.sources import SourceFile

        try:
            with open(module.path, "rb") as handle:
                return SourceFile.decode(handle.read()).text
        except (OSError, SyntaxError, UnicodeDecodeError, LookupError):
            return ""

    def defined_here(self, symbol: Symbol) -> tuple[RelatedLocation, ...]:
        """A finding's related location for the class or name ``symbol`` it names: "`X` is defined here"."""
        definition = self.definition(symbol, f"`{symbol[1]}` is defined here")
        return (definition,) if definition is not None else ()

    def definition(self, symbol: Symbol, message: str) -> RelatedLocation | None:
        """Where the module-level name ``symbol`` is bound (its first ``def``, ``class`` or
        assignment; else a field of that name in one of its classes), as a related location; the
        file is read again with ``ast`` only when a finding names it (the summary keeps no rows)."""
        import ast

        module = self.modules.get(symbol[0])
        try:
            tree = ast.parse(self.text(module)) if module is not None else None
        except (SyntaxError, ValueError, RecursionError):
            return None
        top = list(tree.body) if tree is not None else []
        fields = [node for cls in top if isinstance(cls, ast.ClassDef) for node in cls.body]  # a config class's field
        for node in (*top, *fields):
            names = [node.name] if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else []
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [t.id for t in targets if isinstance(t, ast.Name)]
            if symbol[1] in names:
                return related(module, node.lineno, message, node.col_offset)  # type: ignore[arg-type]  # indentation: ASCII
        return None

    def linen_class(self, module: ProjectModule, ref: Ref) -> Symbol | None:
        """The project's class that ``ref`` (written in ``module``) names, when it derives from a
        Flax linen Module (through the project's classes)."""
        symbol = self.resolve(module, ref)
        return symbol if symbol is not None and self.base_names(symbol) & LINEN_MODULE_CLASSES else None

    def confirm_linen_classes(
        self, candidates: list[Candidate], module: ProjectModule, message: Callable[[Mapping[str, Any]], str]
    ) -> list[Finding]:
        """The candidates whose ``ref`` value names a linen Module class of the project (REM004,
        REM009: a class imported from another module), each with ``message`` of its values, the
        class's name as data and its definition as a related location."""
        kept = []
        for candidate in candidates:
            finding, data = candidate.finding, candidate.values
            symbol = self.linen_class(module, tuple(data["ref"]))
            if symbol is not None:
                finding.message = message(data)
                finding.data = {"class": symbol[1]}
                finding.related = self.defined_here(symbol)
                kept.append(finding)
        return kept

    def call_signature(self, symbol: Symbol) -> Signature | None:
        """The ``__call__`` of the project's module-level class ``symbol``, when it defines one."""
        module = self.modules.get(symbol[0])
        return module.summary.signatures.get(symbol[1]) if module is not None else None

    def resolve(self, module: ProjectModule, ref: Ref) -> Symbol | None:
        """The project's module-level definition that ``ref``, written in ``module``, names."""
        dotted = absolute(ref, module.name, module.package)
        if dotted is None:
            return None
        found = self._lookup(dotted)
        if found is None and ref[0] == 0 and "." in module.name:  # a script importing its neighbour
            found = self._lookup(f"{module.name.rsplit('.', 1)[0]}.{dotted}")
        return found

    def _lookup(self, dotted: str, depth: int = 0) -> Symbol | None:
        owner, _, name = dotted.rpartition(".")
        target = self.modules.get(owner) if owner not in self._ambiguous else None
        if target is None or not name or depth > _MAX_REEXPORTS:
            return None
        if name in target.summary.defines:
            return (target.name, name)
        ref = target.summary.imports.get(name)
        if ref is not None:  # re-exported: ``from .losses import loss_fn`` in a package's __init__
            exported = absolute(ref, target.name, target.package)
            return self._lookup(exported, depth + 1) if exported is not None else None
        for star in reversed(target.summary.star_imports):  # ``from .layers import *``: the last one binding it
            source = absolute(star, target.name, target.package)
            exports = self._star_exports(source, name) if source is not None else None
            if exports is None:
                return None  # it may bind ``name``, or not: left alone
            if exports:
                return self._lookup(f"{source}.{name}", depth + 1)
        return None

    def _star_exports(self, dotted: str, name: str) -> bool | None:
        """Whether ``from <dotted> import *`` binds ``name``: listed in the module's ``__all__`` (a
        literal list or tuple of strings bound once), or without one a public name the module
        defines or imports; None when the module is not the project's or its ``__all__`` is not
        known. A name it binds only through star imports of its own counts where its ``__all__``
        lists it; without one it is left alone."""
        module = self.modules.get(dotted) if dotted not in self._ambiguous else None
        if module is None:
            return None
        summary = module.summary
        if "__all__" in summary.defines or "__all__" in summary.imports:
            listed = summary.constants.get("__all__")
            if listed is None or len(listed) != 1 or listed[0].strings is None:
                return None
            return name in listed[0].strings
        if name.startswith("_"):
            return False
        if name in summary.defines or name in summary.imports:
            return True
        return None if summary.star_imports else False

    def values(
        self, module: ProjectModule, values: Constants, depth: int = 0
    ) -> tuple[Constants, list[ProjectModule]] | None:
        """``values`` (as ``module`` wrote them) with every other module's name replaced by what it
        can hold (``analysis.values.deferred``), and the modules that told; None when one of them
        is unknown."""
        found: list[Constant] = []
        sources: list[ProjectModule] = []
        for value in values:
            if value.kind not in DEFERRED_KINDS:
                found.append(value)
                continue
            answer = self._imported_value(module, value) if depth < _MAX_REEXPORTS else None
            resolved = self.values(answer[0], answer[1], depth + 1) if answer is not None else None
            if answer is None or resolved is None:
                return None
            found += resolved[0]
            sources += [answer[0], *resolved[1]]
        return tuple(found), sources

    def _imported_value(self, module: ProjectModule, value: Constant) -> tuple[ProjectModule, Constants] | None:
        """Where ``value.qname``, imported in ``module`` (kind ``local_field``: a class of
        ``module``), is defined and what it holds there: a module-level constant, the default of a
        config class's field, or any instance's field (``fields.instance_values``)."""
        level, dotted = import_ref(value.qname or "") if value.kind != "local_field" else (LOCAL, value.qname or "")
        if value.kind == "imported_item":
            return self._entry(module, (level, dotted), value.literal)
        symbol = self.resolve(module, (level, dotted)) if value.kind == "imported" else None
        if symbol is not None:
            owner = self.modules[symbol[0]]
            constants = owner.summary.constants.get(symbol[1])
            return (owner, constants) if constants is not None else None
        cls, _, field = dotted.rpartition(".")
        symbol = self.resolve(module, (level, cls)) if cls else None
        if symbol is None or any(field in m.summary.written_fields for m in self.by_path.values()):
            return None  # not a config class of the project, or some module assigns the field
        owner = self.modules[symbol[0]]
        if value.kind == "imported":
            declared = owner.summary.config_fields.get(symbol[1], {}).get(field)
            constants = declared.default if declared is not None else None
        else:
            constants = instance_values(self, owner, symbol[1], field)
        return (owner, constants) if constants is not None else None

    def _entry(
        self, module: ProjectModule, ref: Ref, key: str | bool | int | float | None
    ) -> tuple[ProjectModule, Constants] | None:
        """What the entry ``key`` (None: any entry) of the table ``ref`` (imported in ``module``)
        holds; None when it is unknown or the key is missing (``KeyError``)."""
        found = self.table(module, ref)
        if found is None:
            return None
        owner, entries = found
        known = key is not None and all(e.key is not None for e in entries)
        chosen = [e for e in entries if e.key is not None and e.key.literal == key] if known else list(entries)
        if not chosen or any(e.values is None for e in chosen):
            return None
        return owner, tuple(c for e in chosen for c in e.values or ())

    def table(self, module: ProjectModule, ref: Ref) -> tuple[ProjectModule, tuple[TableEntry, ...]] | None:
        """The module and entries of the dict literal that ``ref`` (written in ``module``) names,
        when no module of the project changes it in place."""
        symbol = self.resolve(module, ref)
        owner = self.modules[symbol[0]] if symbol is not None else None
        entries = owner.summary.tables.get(symbol[1]) if owner is not None and symbol is not None else None
        if owner is None or entries is None or self._changed(symbol):  # type: ignore[arg-type]  # entries: a symbol
            return None
        return owner, entries

    def _changed(self, symbol: Symbol) -> bool:
        """Some module changes the module-level name ``symbol`` in place, as it imports it."""
        return any(
            self.resolve(m, m.summary.imports[name]) == symbol
            for m in self.by_path.values()
            for name in m.summary.changed_imports
        )

    def base_names(self, symbol: Symbol, depth: int = 0) -> set[str]:
        """The dotted names of every base class of the class ``symbol``, through the project's
        classes (``pkg.layers.Block``) to the ones outside it (``flax.linen.Module``)."""
        module = self.modules.get(symbol[0])
        if module is None or depth > _MAX_REEXPORTS:
            return set()
        names: set[str] = set()
        for ref in module.summary.bases.get(symbol[1], ()):
            base = self.resolve(module, ref)
            dotted = f"{base[0]}.{base[1]}" if base is not None else absolute(ref, module.name, module.package)
            if dotted is not None:
                names.add(dotted)
            if base is not None:
                names |= self.base_names(base, depth + 1)
        return names

    def differentiations_reaching(self, symbol: Symbol) -> list[Reach]:
        """The differentiations in other modules that reach the module-level function ``symbol``:
        of ``symbol`` itself, or of a function that returns what ``symbol`` returns with only cheap
        work after it, through tail calls across modules (``train.py`` differentiates ``loss`` of
        ``model.py``, which ends with ``head`` of ``layers.py``) and through plain functions of a
        module on the way (``loss`` ends with ``_inner``, which ends with ``head``), at most
        ``CALL_DEPTH`` calls.
        Computed once for every function, for every file's project phase."""
        if self._reached is None:
            self._reached = {}
            for module in self.by_path.values():
                for d in module.summary.differentiated:
                    for function, reach in self._tails_from(module, d):
                        if function[0] != module.name:
                            self._reached.setdefault(function, []).append(reach)
        return self._reached.get(symbol, [])

    def _tails_from(self, module: ProjectModule, d: Differentiated) -> Iterator[tuple[Symbol, Reach]]:
        """The function ``d`` differentiates, and those its cheap tails call, across modules."""
        start = self.resolve(module, d.ref)
        if start is None:
            return
        frontier, seen = [(start, (d.via,) if d.via else (), d.after, d.via is None)], {start}
        for _ in range(CALL_DEPTH + 1):
            following = []
            for function, path, after, whole in frontier:
                yield function, Reach(module, d, path, after, whole)
                owner = self.modules[function[0]]
                for tail in owner.summary.tail_calls.get(function[1], ()):
                    callee = self.resolve(owner, tail.ref)
                    if callee is not None and callee not in seen:
                        seen.add(callee)
                        following.append((callee, (*path, function[1]), (*tail.after, *after), whole and tail.whole))
            frontier = following

    def calls_of(self, symbol: Symbol, *, instance: bool) -> list[tuple[ProjectModule, ImportedCall]]:
        """Where other modules call the module-level name ``symbol`` (``instance``: call what
        calling it builds, a Flax Module), first by path and row."""
        found = [
            (module, call)
            for module in self.by_path.values()
            if module.name != symbol[0]
            for call in module.summary.imported_calls
            if call.instance == instance and self.resolve(module, call.ref) == symbol
        ]
        return sorted(found, key=lambda use: use[0].path)

    def facts(self, code: str) -> Iterator[tuple[ProjectModule, Any]]:
        for module in self.by_path.values():
            if code in module.facts:
                yield module, module.facts[code]

    def loop_bodies(self) -> set[Symbol]:
        """Every function of the project that some module hands to a scan or loop as its body."""
        if self._loop_bodies is None:
            self._loop_bodies = {
                body for m in self.modules.values() for ref in m.summary.loop_bodies if (body := self.resolve(m, ref))
            }
        return self._loop_bodies

    def in_loop_body(self, symbol: Symbol) -> bool:
        """A scan or loop body of the project is ``symbol`` or calls it (up to ``CALL_DEPTH`` calls):
        a checkpoint there does its job."""
        return any(self.reaches(body, symbol) for body in self.loop_bodies())

    def reaches(self, start: Symbol, goal: Symbol, depth: int = CALL_DEPTH) -> bool:
        """``start`` is ``goal`` or calls it, at most ``depth`` calls away, across modules; a class
        calls what its methods call (a Transformer whose ``setup`` builds another module's Decoder)."""
        frontier, seen = [start], {start}
        for _ in range(depth + 1):
            if goal in frontier:
                return True
            following = []
            for module_name, function in frontier:
                module = self.modules[module_name]
                for ref in module.summary.calls.get(function, ()):
                    callee = self.resolve(module, ref)
                    if callee is not None and callee not in seen:
                        seen.add(callee)
                        following.append(callee)
            frontier = following
        return False


def _package_path(path: str) -> str:
    """``path`` from the folder above its outermost package (folders holding an ``__init__.py``)."""
    folder, parts = os.path.dirname(os.path.abspath(path)), [os.path.basename(path)]
    while (
        os.path.exists(os.path.join(folder, "__init__.py"))
        and os.path.basename(folder).isidentifier()
        and os.path.dirname(folder) != folder
    ):
        parts.insert(0, os.path.basename(folder))
        folder = os.path.dirname(folder)
    return "/".join(parts)


def related(module: ProjectModule, row: int, message: str, column: int = 0) -> RelatedLocation:
    """``row`` of ``module`` as a finding's related location (JSON ``related``, SARIF, ``full``)."""
    from remat_lint.engine.sources import display_path

    return RelatedLocation(display_path(module.path), Position(row, column), message)


def place(module: ProjectModule, row: int | None, seen_from: ProjectModule) -> str:
    """``row`` of ``module`` as a message about ``seen_from`` names it: ``train.py:14``."""
    return os.path.relpath(module.path, os.path.dirname(seen_from.path)) + (f":{row}" if row else "")
