"""path -> Settings: the configuration that governs each file, as ruff's ``Resolver`` finds it.

Each file is governed by the nearest ``remat-lint.toml`` or ``pyproject.toml`` with a
``[tool.remat-lint]`` table in its folder or above, so a file's findings never depend on which
other files are linted with it. A file with none above it gets the configuration found from the
working directory (or the defaults). ``--config`` makes one file govern everything. Options given
on the command line are the last selection layer of every configuration, and
``--target-jax-version`` replaces every configuration's; keys given on the command line
(``--config 'key = value'``, ``--exclude`` ...) are applied on top of each configuration.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from remat_lint.config import jax_version
from remat_lint.config.settings import (
    RuleSelection,
    Settings,
    config_in,
    declares_package,
    find_config,
    load_settings,
    with_overrides,
)
from remat_lint.findings import Finding


class Resolver:
    def __init__(
        self,
        overrides: RuleSelection | None = None,
        config: Path | None = None,
        target_jax_version: str | None = None,
        keys: dict[str, Any] | None = None,
    ) -> None:
        self.overrides, self.target_jax_version = overrides, target_jax_version
        self.keys = keys or {}  # the command line's configuration keys (--config 'key = value', --exclude ...)
        self.fixed = config is not None  # --config: one configuration for every file
        self._loaded: dict[Path | None, Settings] = {}
        self._by_folder: dict[str, Settings] = {}
        self.default = self._settings(config if config is not None else find_config(Path.cwd()))

    @classmethod
    def of(cls, settings: Settings) -> Resolver:
        """Every file governed by ``settings`` (tests, callers that built their own)."""
        resolver = cls.__new__(cls)
        resolver.overrides, resolver.target_jax_version, resolver.fixed, resolver.keys = None, None, True, {}
        resolver._loaded, resolver._by_folder = {}, {}
        resolver.default = settings
        return resolver

    def __call__(self, path: str) -> Settings:
        """The settings for a file (or a folder's entry: the configuration of the folder holding it)."""
        return self.in_folder(os.path.dirname(os.path.abspath(path)))

    def in_folder(self, folder: str) -> Settings:
        """The settings that govern the files in ``folder`` (an absolute path)."""
        if self.fixed:
            return self.default
        settings = self._by_folder.get(folder)
        if settings is not None:
            return settings
        # Walk up until a folder already resolved or holding a configuration: a tree is walked top
        # down, so each new folder costs a look into itself (a pyproject.toml is parsed once).
        walked = []
        for directory in (folder, *map(str, Path(folder).parents)):
            settings = self._by_folder.get(directory)
            if settings is not None:
                break
            walked.append(directory)
            config = config_in(Path(directory))
            if config is not None:
                settings = self._settings(config)
                break
        else:
            settings = self.default
        self._by_folder.update(dict.fromkeys(walked, settings))
        return settings

    def retarget(self, findings: Iterable[Finding]) -> None:
        """Word version-dependent findings for the JAX version each file's project targets."""
        for finding in findings:
            if "before_jax" in finding.data:  # the target (reading the project's pins) only when it matters
                jax_version.retarget([finding], self(finding.path).jax_target()[0])

    def _settings(self, config: Path | None) -> Settings:
        key = config.resolve() if config is not None else None
        if key not in self._loaded:
            settings = with_overrides(load_settings(config), self.keys)
            if self.overrides is not None:
                settings = replace(settings, selection=[*settings.selection, self.overrides])
            if self.target_jax_version is not None:
                settings = replace(
                    settings, target_jax_version=self.target_jax_version, target_from="--target-jax-version"
                )
            if config is not None and not self.fixed:
                settings = self._within_project(settings)
            self._loaded[key] = settings
        return self._loaded[key]

    def _within_project(self, settings: Settings) -> Settings:
        """A configuration below another one chooses rules for its folder, and the project stays
        the outer one's: its root is what cross-module analysis sees, and its JAX target applies
        unless set here. A folder is a project of its own when it is a package (a pyproject.toml
        with [project]) or when the outer configuration excludes it (such as a fixture project)."""
        folder = settings.root
        outer = None if declares_package(folder) or folder.parent == folder else find_config(folder.parent)
        if outer is None:
            return settings
        enclosing = self._settings(outer)
        if enclosing.matches(str(folder), [*enclosing.exclude, *enclosing.extend_exclude]):
            return settings
        inherited = replace(settings, project_root=enclosing.project_root or enclosing.root)
        if settings.target_jax_version is None:
            inherited = replace(
                inherited, target_jax_version=enclosing.target_jax_version, target_from=enclosing.target_from
            )
        return inherited
