"""``[tool.remat-lint]`` in pyproject.toml, and which rules apply to which file.

Selection follows ruff: start from the default rules (or ``select``), add ``extend-select``, remove
``ignore``; selectors are codes, prefixes or ``ALL``, and the more specific selector wins (an
ignore wins a tie). ``per-file-ignores`` maps globs to codes.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import os
import posixpath
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Iterable

from remat_lint.config import jax_version
from remat_lint.registry import rule_index

if TYPE_CHECKING:
    from packaging.version import Version

DEFAULT_EXCLUDE = (
    ".bzr",
    ".direnv",
    ".eggs",
    ".git",
    ".hg",
    ".ipynb_checkpoints",
    ".mypy_cache",
    ".nox",
    ".pytest_cache",
    ".remat_lint_cache",
    ".ruff_cache",
    ".svn",
    ".tox",
    ".venv",
    "__pycache__",
    "__pypackages__",
    "_build",
    "buck-out",
    "build",
    "dist",
    "node_modules",
    "site-packages",
    "venv",
)
DEFAULT_TEST_PATHS = ("tests/", "test/", "*_test.py", "test_*.py", "conftest.py")
KNOWN_KEYS = {
    "select",
    "ignore",
    "extend-select",
    "per-file-ignores",
    "exclude",
    "extend-exclude",
    "test-paths",
    "cache-dir",
    "trace",
    "extend",
    "target-jax-version",
    "extend-per-file-ignores",
    "respect-gitignore",
    "fix",
}


class ConfigError(Exception):
    """A configuration problem the user must fix (exit code 2)."""


@dataclass(frozen=True)
class RuleSelection:
    """One layer of rule selection (a configuration file's, then the command line's), applied in
    order as ruff does: a layer with ``select`` starts afresh, one without carries the rules on."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()

    def apply(self, enabled: frozenset[str]) -> frozenset[str]:
        chosen = []
        for rule in rule_index():
            selected = _specificity(rule.code, (*(self.select or ()), *self.extend_select))
            if rule.preview and selected < len(rule.code):
                selected = -1  # a preview rule runs only when its own code is selected, not by ALL or a prefix
            ignored = _specificity(rule.code, self.ignore)
            carried = self.select is None and rule.code in enabled and ignored < 0
            if carried or (selected >= 0 and selected > ignored):
                chosen.append(rule.code)
        return frozenset(chosen)


@dataclass
class Settings:
    selection: list[RuleSelection] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    exclude: list[str] = field(default_factory=lambda: list(DEFAULT_EXCLUDE))
    extend_exclude: list[str] = field(default_factory=list)
    test_paths: list[str] = field(default_factory=lambda: list(DEFAULT_TEST_PATHS))
    cache_dir: str | None = None
    respect_gitignore: bool = True  # skip what .gitignore, .ignore and .git/info/exclude ignore (ruff's default)
    fix: bool = False  # `fix = true`: apply safe fixes without --fix (--no-fix overrides it)
    trace: dict[str, Any] = field(default_factory=dict)
    root: Path = field(default_factory=Path.cwd)  # the directory relative paths are resolved from
    # The folder of the outermost configuration of the project, when this one lies inside it
    # (resolver.py): cross-module analysis and the JAX pin are the project's, not this folder's.
    project_root: Path | None = None
    config_file: Path | None = None
    target_jax_version: str | None = None  # None: the project's pin (jax_version.detect)
    target_from: str = ""  # where target_jax_version was set
    _enabled: frozenset[str] | None = field(default=None, init=False, repr=False, compare=False)
    _target: tuple[Version | None, str] | None = field(default=None, init=False, repr=False, compare=False)

    # --- rule selection ------------------------------------------------------------------------

    def enabled_codes(self) -> frozenset[str]:
        if self._enabled is None:  # asked for every file: computed once (settings are complete by then)
            enabled = frozenset(rule.code for rule in rule_index() if rule.default_enabled and not rule.preview)
            for layer in self.selection:
                enabled = layer.apply(enabled)
            self._enabled = enabled
        return self._enabled

    def jax_target(self) -> tuple[Version | None, str]:
        """The JAX version that findings are worded for, and where it comes from."""
        if self._target is None:
            if self.target_jax_version is not None:
                self._target = (jax_version.parse(self.target_jax_version), self.target_from)
            else:
                self._target = jax_version.detect(str(self.project_root or self.root))
        return self._target

    def codes_for(self, path: str, enabled: frozenset[str] | None = None) -> frozenset[str]:
        """The enabled codes minus the per-file ignores that match ``path``."""
        enabled = self.enabled_codes() if enabled is None else enabled
        ignored = [
            code for glob, codes in self.per_file_ignores.items() if self.matches(path, [glob]) for code in codes
        ]
        if not ignored:
            return enabled
        return frozenset(code for code in enabled if _specificity(code, ignored) < 0)

    # --- paths ---------------------------------------------------------------------------------

    def relative(self, path: str) -> PurePosixPath:
        # String operations: this runs for every file and directory walked (pathlib's
        # resolve/relative_to made it the slowest part of a warm run).
        root = _resolved(self.root)
        full = os.path.abspath(path)
        prefix = root if root.endswith(os.sep) else root + os.sep
        rel = full[len(prefix) :] if full.startswith(prefix) else (path if full != root else ".")
        return PurePosixPath(rel.replace(os.sep, "/") if os.sep != "/" else rel)

    def matches(self, path: str, globs: Iterable[str]) -> bool:
        """ruff/gitignore-like matching: a glob with a slash matches the root-relative path (and
        its parents), one without matches any single path component."""
        rel = self.relative(path)
        parts = rel.parts
        for glob in globs:
            pattern = glob.rstrip("/")
            if "/" in pattern:
                candidates = [str(PurePosixPath(*parts[: i + 1])) for i in range(len(parts))]
                if any(fnmatch.fnmatchcase(c, pattern) for c in candidates):
                    return True
            elif any(fnmatch.fnmatchcase(part, pattern) for part in parts):
                return True
        return False

    def excluded_in(self, folder: str) -> Callable[[str], bool]:
        """Whether an entry of ``folder`` met while walking, given by name, is excluded: globs
        match the entry's own name or root-relative path, not its parents', so a path given
        explicitly is linted. The folder's root-relative path is computed once, not per entry
        (per entry it was 40 % of discovery on a warm run)."""
        rel = str(self.relative(folder))
        by_name, by_path = _exclude_patterns((*self.exclude, *self.extend_exclude))

        def excluded(name: str) -> bool:
            path = name if rel == "." else posixpath.join(rel, name)
            return bool(by_name and by_name.match(name)) or bool(by_path and by_path.match(path))

        return excluded

    def is_test_file(self, path: str) -> bool:
        return self.matches(path, self.test_paths)


@functools.lru_cache(maxsize=8)
def _resolved(root: Path) -> str:
    return str(root.resolve())


@functools.lru_cache(maxsize=32)
def _exclude_patterns(globs: tuple[str, ...]) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    """The exclude globs as one regular expression for entry names and one for root-relative paths
    (a glob with a slash): every file and directory walked is matched once, not once per glob
    (fnmatch for each of the 23 defaults was a tenth of a warm run)."""
    patterns = [glob.rstrip("/") for glob in globs]
    by_name = [fnmatch.translate(p) for p in patterns if "/" not in p]
    by_path = [fnmatch.translate(p) for p in patterns if "/" in p]
    return (re.compile("|".join(by_name)) if by_name else None, re.compile("|".join(by_path)) if by_path else None)


def _specificity(code: str, selectors: Iterable[str]) -> int:
    """Length of the longest selector matching ``code`` (``ALL`` counts 0), -1 when none does."""
    best = -1
    for selector in selectors:
        selector = selector.strip().upper()
        if selector == "ALL":
            best = max(best, 0)
        elif selector and code.startswith(selector):
            best = max(best, len(selector))
    return best


def validate_selectors(selectors: Iterable[str], where: str = "") -> None:
    codes = [rule.code for rule in rule_index()]
    for selector in selectors:
        s = selector.strip().upper()
        if not s:
            raise ConfigError(f"{where}empty rule selector (give a code, a prefix or ALL)")
        if s != "ALL" and not any(code.startswith(s) for code in codes):
            raise ConfigError(f"{where}unknown rule selector {selector!r} (see `remat-lint rule --all`)")


CONFIG_NAMES = ("remat-lint.toml", "pyproject.toml")  # in one folder, the first wins (ruff: ruff.toml first)


def config_in(directory: Path) -> Path | None:
    """The configuration file in ``directory``: a remat-lint.toml, or a pyproject.toml with a
    [tool.remat-lint] table. A file that is not valid TOML is an error, as in ruff."""
    for name in CONFIG_NAMES:
        candidate = directory / name
        if candidate.is_file() and (name != "pyproject.toml" or "remat-lint" in _read_toml(candidate).get("tool", {})):
            return candidate
    return None


def find_config(start: Path) -> Path | None:
    """The nearest configuration file in ``start`` or a folder above it."""
    for directory in (start, *start.parents):
        found = config_in(directory)
        if found is not None:
            return found
    return None


def declares_package(folder: Path) -> bool:
    """Whether ``folder`` holds a pyproject.toml with a [project] table: a package of its own."""
    pyproject = folder / "pyproject.toml"
    return pyproject.is_file() and isinstance(_read_toml(pyproject).get("project"), dict)


def load_settings(config_file: Path | None, _extending: tuple[Path, ...] = ()) -> Settings:
    """The settings a configuration file gives, after the file it ``extend``s (paths in both are
    relative to this file's folder, as ruff resolves an extended configuration)."""
    if config_file is None:
        return Settings()
    config_file = Path(os.path.abspath(config_file))
    table = _table(config_file)
    base = table.get("extend")
    if base is None:
        settings = Settings()
    else:
        if not isinstance(base, str):
            raise ConfigError(f"{config_file}: extend must be a path (a string)")
        base_file = Path(os.path.abspath(config_file.parent / os.path.expanduser(base)))
        if base_file in (*_extending, config_file):
            raise ConfigError(f"{config_file}: extend forms a cycle through {base_file}")
        if not base_file.is_file():
            raise ConfigError(f"{config_file}: extend: {base_file} not found")
        settings = load_settings(base_file, (*_extending, config_file))
    settings.root, settings.config_file = config_file.parent, config_file
    _apply(table, settings, f"{config_file}: ")
    return settings


def with_overrides(settings: Settings, table: dict[str, Any]) -> Settings:
    """``settings`` with the command line's keys on top (``--config 'key = value'``, --exclude ...):
    they win over every configuration file; a ``trace`` table there sets single keys."""
    if not table:
        return settings
    settings = dataclasses.replace(
        settings, selection=list(settings.selection), per_file_ignores=dict(settings.per_file_ignores)
    )
    if isinstance(table.get("trace"), dict):
        table = {**table, "trace": {**settings.trace, **table["trace"]}}
    if isinstance(table.get("extend-exclude"), list):  # on top of the configuration's, as its name says
        table = {**table, "extend-exclude": [*settings.extend_exclude, *table["extend-exclude"]]}
    _apply(table, settings, "command line: ")
    return settings


def parse_overrides(fragments: list[str]) -> dict[str, Any]:
    """The ``--config 'key = value'`` fragments (TOML, as ruff's --config) as one table, later
    ones winning; each is checked now, so that an error names the fragment."""
    tomllib = _tomllib()
    merged: dict[str, Any] = {}
    for fragment in fragments:
        try:
            table = tomllib.loads(fragment)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"--config {fragment!r} is neither a file nor a TOML `key = value` pair: {exc}") from exc
        if "extend" in table:
            raise ConfigError(
                f"--config {fragment!r}: extend is for configuration files (give the file as --config PATH)"
            )
        _apply(table, Settings(), f"--config {fragment!r}: ")
        if isinstance(merged.get("trace"), dict) and isinstance(table.get("trace"), dict):
            table = {**table, "trace": {**merged["trace"], **table["trace"]}}
        merged.update(table)
    return merged


def _tomllib() -> ModuleType:
    # Imported when needed: ~3 ms that a run without a configuration file never pays.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib


def _read_toml(path: Path) -> dict[str, Any]:
    tomllib = _tomllib()
    try:
        data: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from exc
    return data


def _table(config_file: Path) -> dict[str, Any]:
    """The [tool.remat-lint] table; a remat-lint.toml may also hold the keys at its top level."""
    data = _read_toml(config_file)
    tool = data.get("tool", {})
    if isinstance(tool, dict) and "remat-lint" in tool:
        table = tool["remat-lint"]
    elif config_file.name == "remat-lint.toml":
        table = data
    else:
        table = {}
    if not isinstance(table, dict):
        raise ConfigError(f"{config_file}: [tool.remat-lint] must be a table")
    return table


def _apply(table: dict[str, Any], settings: Settings, where: str) -> None:
    unknown = sorted(set(table) - KNOWN_KEYS)
    if unknown:  # as ruff: a misspelt key would silently do nothing
        raise ConfigError(
            f"{where}unknown key {unknown[0]!r} in [tool.remat-lint] (known: {', '.join(sorted(KNOWN_KEYS))})"
        )
    if {"select", "extend-select", "ignore"} & table.keys():
        select = _str_list(table, "select", None, where)
        layer = RuleSelection(
            None if select is None else tuple(select),
            tuple(_str_list(table, "extend-select", [], where)),
            tuple(_str_list(table, "ignore", [], where)),
        )
        for selectors in (layer.select or (), layer.extend_select, layer.ignore):
            validate_selectors(selectors, where)
        settings.selection.append(layer)
    settings.exclude = _str_list(table, "exclude", settings.exclude, where)
    settings.extend_exclude = _str_list(table, "extend-exclude", settings.extend_exclude, where)
    settings.test_paths = _str_list(table, "test-paths", settings.test_paths, where)
    if "per-file-ignores" in table:
        settings.per_file_ignores = _per_file_ignores(table, "per-file-ignores", where)
    if "extend-per-file-ignores" in table:
        extra = _per_file_ignores(table, "extend-per-file-ignores", where)
        settings.per_file_ignores = {
            glob: [*settings.per_file_ignores.get(glob, []), *extra.get(glob, [])]
            for glob in {**settings.per_file_ignores, **extra}
        }
    for key in ("respect-gitignore", "fix"):
        if key in table:
            if not isinstance(table[key], bool):
                raise ConfigError(f"{where}{key} must be true or false, got {table[key]!r}")
            setattr(settings, key.replace("-", "_"), table[key])
    if "cache-dir" in table:
        if not isinstance(table["cache-dir"], str):
            raise ConfigError(f"{where}cache-dir must be a string")
        settings.cache_dir = table["cache-dir"]
    if "target-jax-version" in table:
        target = table["target-jax-version"]
        try:
            jax_version.parse(target if isinstance(target, str) else repr(target))
        except ValueError as exc:
            raise ConfigError(f"{where}target-jax-version: {exc}") from exc
        settings.target_jax_version, settings.target_from = target, where.rstrip(": ")
    if "trace" in table:
        from remat_lint.trace import table as trace_table  # only parses: no JAX

        try:
            trace_table.check(table["trace"])
        except trace_table.TableError as exc:
            raise ConfigError(f"{where}{exc}") from exc
        settings.trace = dict(table["trace"])


def _per_file_ignores(table: dict[str, Any], key: str, where: str) -> dict[str, list[str]]:
    value = table[key]
    if not isinstance(value, dict):
        raise ConfigError(f"{where}{key} must map globs to lists of codes (a table), got {value!r}")
    for glob, codes in value.items():
        if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
            raise ConfigError(f"{where}{key} must map globs to lists of codes: {glob!r} = {codes!r}")
        validate_selectors(codes, f"{where}{key} {glob!r}: ")
    return {str(glob): list(codes) for glob, codes in value.items()}


def _str_list(table: dict[str, Any], key: str, default: Any, where: str = "") -> Any:
    if key not in table:
        return default
    value = table[key]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}{key} must be a list of strings, got {value!r}")
    return list(value)
