"""The project files a linted file imports, transitively: what a file linted alone (pre-commit's
staged files, flake8, an editor's buffer) needs read for its cross-module findings (the wrap that
``stack.py`` calls lives in ``layers.py``, which ``stack.py`` imports).

Cheap, as a run that lints one staged file must be: the imports are found in the text by a regular
expression, whether or not the file names a remat API (a caller often does not:
``L.rotary_attention(q, k, v, num_heads=4)``), and the modules by probing their paths below the
project root, not by walking the project (``ast`` on every file of jax+flax takes 2.2 s, the
expression 0.09 s; the walk and its ``realpath``s cost most of a warm one-file run). The
expression over-approximates (an ``import`` line in a docstring counts): a file too many is read
for its facts, never a finding too many.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from typing import Callable, Iterator

from remat_lint.config.resolver import Resolver
from remat_lint.project.modules import LIBRARIES, absolute, is_package, module_names

_IMPORT = re.compile(
    rb"^[ \t]*(?:from[ \t]+(?P<base>\.*[\w.]*)[ \t]+import[ \t]+(?P<names>\([^)]*\)|[^\n#;]*)|import[ \t]+(?P<modules>[^\n#;]+))",
    re.M,
)


@dataclass(frozen=True)
class ImportFacts:
    """What a file linted alone needs of a file it imports (kept by ``cache/import_index.py``):
    the absolute dotted names it imports, and whether it may export a wrap whose calls a rule
    judges (``exports.py``)."""

    names: frozenset[str]
    may_export: bool


class ProjectFiles:
    """The files of the project at ``root`` (those a run on ``root`` would lint) by the dotted
    names they are imported as, found on demand."""

    def __init__(self, root: str, resolver: Resolver) -> None:
        self.root, self.resolver = root, resolver
        self._paths: dict[str, str | None] = {}  # dotted name -> path
        self._excluded: dict[str, Callable[[str], bool]] = {}  # folder -> whether an entry of it is excluded
        self._folders: dict[str, bool] = {}  # real folder -> whether a run on the root walks it
        self._folders_below: dict[tuple[str, ...], str | None] = {}  # parts below the root -> the folder
        self._listed: dict[str, dict[str, bool]] = {}  # folder -> its files and folders (True)
        self._chains: dict[str, tuple[str, ...]] = {}  # dotted name -> its files and its packages'
        self._modules: dict[str, str | None] = {}  # path -> the dotted name it is imported as

    def contains(self, path: str) -> bool:
        """``path`` (a real path) is below the root and no folder on the way excludes it."""
        folder, name = os.path.split(path)
        return self._included(folder) and not self._excluded_in(folder)(name)

    def _included(self, folder: str) -> bool:
        """``folder`` (a real path) is the root or an included folder below it (once per folder)."""
        if folder not in self._folders:
            parent, name = os.path.split(folder)
            root = os.path.realpath(self.root)
            self._folders[folder] = folder == root or (
                parent != folder
                and folder.startswith(root + os.sep)
                and self._included(parent)
                and not self._excluded_in(parent)(name)
            )
        return self._folders[folder]

    def _excluded_in(self, folder: str) -> Callable[[str], bool]:
        if folder not in self._excluded:
            self._excluded[folder] = self.resolver.in_folder(folder).excluded_in(folder)
        return self._excluded[folder]

    def path_of(self, name: str) -> str | None:
        """The project file imported as ``name`` (``pkg.layers``; also below ``src/``)."""
        if name not in self._paths:
            *packages, last = name.split(".")
            folders = (self._folder((*base, *packages)) for base in ((), ("src",)))
            candidates = (path for folder in folders if folder is not None for path in self._candidates(folder, last))
            self._paths[name] = next((path for path in candidates if self.contains(path)), None)
        return self._paths[name]

    def _candidates(self, folder: str, last: str) -> Iterator[str]:
        """The files in ``folder`` that the module ``last`` may be, in the order they are tried (a
        package before a module of its name)."""
        entries = self._entries(folder)
        package = os.path.join(folder, last)
        inside = self._entries(package) if entries.get(last) else {}
        for suffix in (".py", ".pyi"):
            if inside.get("__init__" + suffix) is False:
                yield os.path.join(package, "__init__" + suffix)
            if entries.get(last + suffix) is False:
                yield os.path.join(folder, last + suffix)

    def _folder(self, parts: tuple[str, ...]) -> str | None:
        """The folder ``parts`` below the root; None when it is not one (once per folder)."""
        if parts not in self._folders_below:
            if not parts:
                found: str | None = self.root
            else:
                parent = self._folder(parts[:-1])
                found = os.path.join(parent, parts[-1]) if parent and self._entries(parent).get(parts[-1]) else None
            self._folders_below[parts] = found
        return self._folders_below[parts]

    def _entries(self, folder: str) -> dict[str, bool]:
        """The files and folders in ``folder``, each with whether it is a folder; listed once per
        folder: most dotted names imported are a module's attributes (``linears.Dense``), whose
        would-be folder and four would-be files do not exist. A listing costs less than the
        probes it replaces, and a replay record lists the folder once, not every probe
        (``recording.py``): an entry added, removed or renamed changes the folder's signature."""
        if folder not in self._listed:
            listed: dict[str, bool] = {}
            try:
                with os.scandir(folder) as entries:
                    for entry in entries:
                        with contextlib.suppress(OSError):
                            if entry.is_dir() or entry.is_file():
                                listed[entry.name] = entry.is_dir()
            except OSError:
                pass
            self._listed[folder] = listed
        return self._listed[folder]

    def names(self, path: str, data: bytes) -> frozenset[str]:
        """The absolute dotted names that ``data`` (the file ``path``) imports."""
        return frozenset(_imported_names(data, self._module(path), is_package(path)))

    def imported(self, path: str, names: frozenset[str]) -> set[str]:
        """The project's files that the file ``path`` imports (``names``): each module named and
        the packages above it (their ``__init__`` may re-export a name)."""
        module = self._module(path)
        package = module.rsplit(".", 1)[0] if module and "." in module else None
        # ``import layers`` in a script beside it, as Project.resolve reads it: only where there is
        # one (most names a MaxText trainer's closure probed were such would-be neighbours).
        beside = self._entries(os.path.dirname(path)) if package else {}
        found: set[str] = set()
        for dotted in names:
            first = dotted.split(".", 1)[0]
            if first in LIBRARIES:
                continue
            found.update(self._with_packages(dotted))
            if beside.get(first) or beside.get(first + ".py") is False or beside.get(first + ".pyi") is False:
                found.update(self._with_packages(f"{package}.{dotted}"))
        return found

    def _module(self, path: str) -> str | None:
        """The dotted name ``path`` is imported as (once per file: names, then imported)."""
        if path not in self._modules:
            names = module_names(os.path.relpath(path, self.root))
            self._modules[path] = names[0] if names else None
        return self._modules[path]

    def _with_packages(self, name: str) -> tuple[str, ...]:
        """The files of ``name`` and of the packages above it, once per name (most files of a
        project import the same names)."""
        if name not in self._chains:
            package, _, _ = name.rpartition(".")
            above = self._with_packages(package) if package else ()
            path = self.path_of(name)
            self._chains[name] = above if path is None else (*above, path)
        return self._chains[name]

    def closure(
        self,
        linted: dict[str, bytes],
        facts_of: Callable[[str], ImportFacts | None],
        real: Callable[[str], str] = os.path.realpath,
    ) -> list[tuple[str, ImportFacts | None]]:
        """The files that ``linted`` (path -> bytes) import, transitively, within the project, with
        their facts as ``facts_of`` gives them (None when it cannot read one); ``real``: a path's
        real path."""
        seen = {real(path) for path in linted}
        frontier = [(path, self.names(path, data)) for path, data in linted.items()]
        found: list[tuple[str, ImportFacts | None]] = []
        while frontier:
            following = []
            for path, names in frontier:
                for imported in sorted(self.imported(path, names)):
                    if real(imported) in seen:
                        continue
                    seen.add(real(imported))
                    facts = facts_of(imported)
                    found.append((imported, facts))
                    if facts is not None:
                        following.append((imported, facts.names))
            frontier = following
        return found


def _imported_names(data: bytes, module: str | None, package: bool) -> set[str]:
    """Absolute dotted names of what ``data`` imports: ``import a.b`` -> a.b; ``from .c import d``
    (in ``pkg.m``) -> pkg.c and pkg.c.d (``d`` may be a module)."""
    names = set()
    for match in _import_statements(data):
        written, listed, modules = match.group("base", "names", "modules")
        if modules is not None:
            names.update(_words(modules))
            continue
        stripped = written.lstrip(b".")
        level, dotted = len(written) - len(stripped), stripped.decode("utf-8", "replace")
        if level and module is None:
            continue
        base = absolute((level, dotted), module, package) if level and module else dotted
        if base:
            names.add(base)
            names.update(f"{base}.{name}" for name in _words(listed.strip(b"()")) if name != "*")
    return names


def _import_statements(data: bytes) -> Iterator[re.Match[bytes]]:
    """``_IMPORT``'s matches, tried only at the lines that hold ``import`` (a third of the time of
    ``finditer``, which tries every line of a 100k-line closure)."""
    tried = -1
    at = data.find(b"import")
    while at != -1:
        start = data.rfind(b"\n", 0, at) + 1
        if start > tried:
            tried = start
            match = _IMPORT.match(data, start)
            if match is not None:
                yield match
                tried = match.end()  # a parenthesised list's lines are not statements
        at = data.find(b"import", at + 6)


def _words(listed: bytes) -> list[str]:
    """The dotted names of ``a.b as c, d`` (each item's first word)."""
    return [
        words[0].decode("utf-8", "replace")
        for item in listed.replace(b"\\", b" ").split(b",")
        if (words := item.split())
    ]
