"""``[tool.remat-lint]`` in pyproject.toml, and which rules apply to which file.

Selection follows ruff: start from the default rules (or ``select``), add ``extend-select``, remove
``ignore``; selectors are codes, prefixes or ``ALL``, and the more specific selector wins (an
ignore wins a tie). ``per-file-ignores`` maps globs to codes.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Iterable

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from remat_lint.registry import rule_index

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
}


class ConfigError(Exception):
    """A configuration problem the user must fix (exit code 2)."""


@dataclass
class Settings:
    select: list[str] | None = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    exclude: list[str] = field(default_factory=lambda: list(DEFAULT_EXCLUDE))
    extend_exclude: list[str] = field(default_factory=list)
    test_paths: list[str] = field(default_factory=lambda: list(DEFAULT_TEST_PATHS))
    cache_dir: str | None = None
    trace: dict[str, Any] = field(default_factory=dict)
    root: Path = field(default_factory=Path.cwd)  # the directory relative paths are resolved from
    config_file: Path | None = None
    warnings: list[str] = field(default_factory=list)

    # --- rule selection ------------------------------------------------------------------------

    def enabled_codes(self) -> frozenset[str]:
        selectors = self.select if self.select is not None else None
        chosen = []
        for rule in rule_index():
            selected = _specificity(rule.code, (selectors or []) + self.extend_select)
            if selectors is None and rule.default_enabled:
                selected = max(selected, 0)
            ignored = _specificity(rule.code, self.ignore)
            if selected >= 0 and selected > ignored:
                chosen.append(rule.code)
        return frozenset(chosen)

    def codes_for(self, path: str, enabled: frozenset[str]) -> frozenset[str]:
        """The enabled codes minus the per-file ignores that match ``path``."""
        ignored = [code for glob, codes in self.per_file_ignores.items() if self.matches(path, [glob]) for code in codes]
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
        rel = full[len(prefix):] if full.startswith(prefix) else (path if full != root else ".")
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

    def is_excluded(self, path: str) -> bool:
        """Whether a directory entry met while walking is excluded: globs match the entry's own
        name or root-relative path, not its parents', so a path given explicitly is linted."""
        rel = self.relative(path)
        for glob in (*self.exclude, *self.extend_exclude):
            pattern = glob.rstrip("/")
            if fnmatch.fnmatchcase(str(rel) if "/" in pattern else rel.name, pattern):
                return True
        return False

    def is_test_file(self, path: str) -> bool:
        return self.matches(path, self.test_paths)


@functools.lru_cache(maxsize=8)
def _resolved(root: Path) -> str:
    return str(root.resolve())


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


def validate_selectors(selectors: Iterable[str]) -> None:
    codes = [rule.code for rule in rule_index()]
    for selector in selectors:
        s = selector.strip().upper()
        if s != "ALL" and not any(code.startswith(s) for code in codes):
            raise ConfigError(f"unknown rule selector {selector!r} (see `remat-lint rule --all`)")


def find_config(start_paths: Iterable[str]) -> Path | None:
    """The nearest pyproject.toml with a [tool.remat-lint] table, walking up from the paths."""
    starts = [Path(os.path.abspath(p)) for p in start_paths] or [Path.cwd()]
    common = Path(os.path.commonpath([str(p) for p in starts]))
    directory = common if common.is_dir() else common.parent
    for candidate in (directory, *directory.parents):
        pyproject = candidate / "pyproject.toml"
        if pyproject.is_file():
            try:
                data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                continue
            if "remat-lint" in data.get("tool", {}):
                return pyproject
    return None


def load_settings(config_file: Path | None) -> Settings:
    if config_file is None:
        return Settings()
    try:
        data = tomllib.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {config_file}: {exc}") from exc
    table = data.get("tool", {}).get("remat-lint", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{config_file}: [tool.remat-lint] must be a table")
    settings = Settings(root=config_file.parent.resolve(), config_file=config_file)
    for key in table:
        if key not in KNOWN_KEYS:
            settings.warnings.append(f"{config_file}: unknown key {key!r} in [tool.remat-lint]")
    settings.select = _str_list(table, "select", None)
    settings.extend_select = _str_list(table, "extend-select", [])
    settings.ignore = _str_list(table, "ignore", [])
    settings.exclude = _str_list(table, "exclude", list(DEFAULT_EXCLUDE))
    settings.extend_exclude = _str_list(table, "extend-exclude", [])
    settings.test_paths = _str_list(table, "test-paths", list(DEFAULT_TEST_PATHS))
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict) or not all(isinstance(v, list) for v in pfi.values()):
        raise ConfigError(f"{config_file}: per-file-ignores must map globs to lists of codes")
    settings.per_file_ignores = {str(k): [str(c) for c in v] for k, v in pfi.items()}
    cache_dir = table.get("cache-dir")
    settings.cache_dir = str(cache_dir) if cache_dir is not None else None
    settings.trace = dict(table.get("trace", {}))
    for selectors in (settings.select or [], settings.extend_select, settings.ignore, *settings.per_file_ignores.values()):
        validate_selectors(selectors)
    return settings


def _str_list(table: dict[str, Any], key: str, default: Any) -> Any:
    if key not in table:
        return default
    value = table[key]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"[tool.remat-lint] {key} must be a list of strings")
    return list(value)
