"""The server's warm model of the project: the open buffers, the configuration, and per open file
the project-wide pass (runner.ProjectPass) with the other files' facts already collected.

Nothing here knows the protocol: it takes paths and texts and gives findings, so that it can be
tested and benchmarked without a client. Linting goes through the same functions as the CLI
(``runner.lint_one``, ``runner.ProjectPass``, ``autofix.fix_sources``); other files are read from
the open buffers first, then from the disk.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from remat_lint.cache.result_cache import Cache
from remat_lint.config.resolver import Resolver
from remat_lint.config.settings import ConfigError, RuleSelection, Settings
from remat_lint.engine.results import FileResult
from remat_lint.engine.runner import ProjectPass, lint_one, project_root
from remat_lint.engine.sources import SUFFIX as NOTEBOOK
from remat_lint.engine.sources import Notebook, SourceFile
from remat_lint.engine.unsaved import Unsaved
from remat_lint.findings import Finding

CONFIG_NAMES = ("pyproject.toml", "remat-lint.toml")


class MemoryCache(Cache):
    """The result cache (content-keyed, as on disk) kept in memory: re-collecting the project's
    other files after a change re-lints only the files whose text changed."""

    def __init__(self) -> None:  # no folder, no fingerprint: it lives as long as the server
        self.enabled = True
        self._entries: dict[str, FileResult] = {}

    def get(self, key: str, path: str) -> FileResult | None:
        result = self._entries.get(key)
        return (
            None
            if result is None
            else FileResult(
                path,
                list(result.findings),
                result.facts,
                result.summary,
                result.parsed,
                candidates=list(result.candidates),
            )
        )

    def put(self, key: str, result: FileResult) -> None:
        self._entries[key] = result


@dataclass
class OpenFile:
    text: str
    passes: ProjectPass | None = None  # its project-wide pass, warm while no other file changes
    cross_module: bool = False  # its last lint ran the project phase: other files' changes matter
    stale: set[str] = field(default_factory=set)  # other buffers changed since its pass collected them


@dataclass
class Workspace:
    overrides: RuleSelection | None = None  # initializationOptions' select / ignore
    open_files: dict[str, OpenFile] = field(default_factory=dict)
    cache: MemoryCache = field(default_factory=MemoryCache)
    unsaved: Unsaved = field(default_factory=Unsaved)  # the open buffers' texts, read before the disk
    config_error: str | None = None

    def __post_init__(self) -> None:
        self.resolver = self._resolver()

    def _resolver(self) -> Resolver:
        """The configurations of the open files, read now so that a broken one is reported now."""
        self.config_error = None
        try:
            resolver = Resolver(self.overrides)
            for path in self.open_files:
                resolver(path)
        except ConfigError as exc:
            return self._defaults(exc)
        return resolver

    def _defaults(self, error: ConfigError) -> Resolver:
        """A half-typed pyproject.toml: every file gets the defaults until a configuration changes."""
        self.config_error = str(error)
        self.resolver = Resolver.of(Settings(selection=[self.overrides] if self.overrides else []))
        return self.resolver

    def settings(self, path: str) -> Settings:
        try:
            return self.resolver(path)
        except ConfigError as exc:  # a file opened in a folder whose configuration is broken
            return self._defaults(exc)(path)

    def reload_settings(self) -> None:
        """A configuration file changed: resolve every file afresh, drop the warm passes."""
        self.resolver = self._resolver()
        for opened in self.open_files.values():
            opened.passes = None

    def open(self, path: str, text: str) -> None:
        self.open_files.setdefault(path, OpenFile(text)).text = text
        if not path.endswith(NOTEBOOK):  # an open notebook's cells are not kept as its file
            self.unsaved.put(path, text)

    def close(self, path: str) -> None:
        self.open_files.pop(path, None)
        self.unsaved.drop(path)

    def lint(self, path: str, source: SourceFile | Notebook | Finding | None = None) -> list[Finding]:
        """The findings of an open file (or of ``source``, a notebook's joined cells), project-wide
        ones decided with the other files' facts."""
        opened = self.open_files.setdefault(path, OpenFile(""))
        # A .py buffer is text already (its coding cookie does not apply).
        result = lint_one(path, SourceFile(opened.text) if source is None else source, self.settings(path))
        if opened.passes is None:
            opened.passes = ProjectPass([path], self.resolver, cache=self.cache, unsaved=self.unsaved)
        else:
            for other in opened.stale:
                opened.passes.refresh(other)
        opened.stale.clear()
        opened.passes([result])
        opened.cross_module = bool(opened.passes.others or opened.passes.imported)  # other files' facts were read
        self.resolver.retarget(result.findings)
        return sorted(result.findings, key=lambda f: f.sort_key)

    def changed(self, path: str, *, on_disk: bool = False) -> list[str]:
        """``path`` changed (a buffer, or the disk: created, deleted): the other open files of its
        project whose project-wide findings may change with it. Their warm passes take a buffer's
        new text; a change on disk makes them collect the other files afresh."""
        if os.path.basename(path) in CONFIG_NAMES:
            self.reload_settings()
            return [p for p in self.open_files if p != path]
        root = project_root(self.resolver, [os.path.abspath(path)])
        dependents = []
        for other, opened in self.open_files.items():
            if other == path or project_root(self.resolver, [os.path.abspath(other)]) != root:
                continue
            if on_disk or (opened.passes is not None and not opened.passes.holds(path)):  # a file new to the project
                opened.passes = None
            else:
                opened.stale.add(path)  # refreshed when this file is linted next, not while typing in that one
            if opened.cross_module:
                dependents.append(other)
        return dependents
