"""The JAX version a project targets (``target-jax-version``), and findings worded for it.

JAX teams pin JAX and upgrade deliberately, so a message about an API JAX removed is most
useful when it says what the planned upgrade breaks. A rule whose truth depends on the version
reports the message for the newest JAX and, in the finding's ``before_jax`` data, the version
where that became true with the message for older targets; ``retarget`` picks one.

Without a configured target, the project's own pin decides: ``jax==``/``~=`` in
``pyproject.toml`` (``[project]`` dependencies and optional dependencies, Poetry's table), in
``requirements*.txt``, or the version of ``jax`` in ``uv.lock``/``poetry.lock``; then the JAX
installed beside remat-lint; else none (the newest JAX's behaviour).
"""

from __future__ import annotations

import glob
import os
import re
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from remat_lint.findings import Finding

if TYPE_CHECKING:
    from packaging.version import Version

# packaging and tomllib are imported where needed: a run with no version-dependent finding and
# no configured target (the common warm pre-commit run) never pays their ~14 ms.

_LOCKED = re.compile(r'^name = "jax"\r?\nversion = "([^"]+)"', re.MULTILINE)


def parse(text: str) -> Version:
    """Raises ValueError with a reason for anything packaging cannot read as a version."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(text)
    except InvalidVersion as exc:
        raise ValueError(f'{text!r} is not a version (e.g. "0.8" or "0.10.2")') from exc


def detect(root: str) -> tuple[Version | None, str]:
    """The JAX version the project in ``root`` pins, and where it was read."""
    from importlib import metadata

    from packaging.version import InvalidVersion, Version

    pyproject = os.path.join(root, "pyproject.toml")
    found = _pinned(_pyproject_requirements(pyproject))
    if found is not None:
        return found, pyproject
    for path in sorted(glob.glob(os.path.join(root, "requirements*.txt"))):
        found = _pinned(_lines(path))
        if found is not None:
            return found, path
    for lock in ("uv.lock", "poetry.lock"):
        path = os.path.join(root, lock)
        match = _LOCKED.search(_read(path))
        if match:
            try:
                return Version(match.group(1)), path
            except InvalidVersion:
                pass
    try:
        return Version(metadata.version("jax")), "the installed jax"
    except (metadata.PackageNotFoundError, InvalidVersion):
        return None, "none found (the newest JAX's behaviour)"


def retarget(findings: Iterable[Finding], target: Version | None) -> None:
    """Word each version-dependent finding for ``target``."""
    if target is None:
        return
    from packaging.version import Version

    for finding in findings:
        before = finding.data.get("before_jax")
        if before is not None and target < Version(before[0]):
            finding.message = before[1]


def _pinned(requirements: Iterable[str]) -> Version | None:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.version import Version

    for line in requirements:
        try:
            requirement = Requirement(line.split("#")[0].strip())
        except InvalidRequirement:
            continue
        if requirement.name.lower() == "jax":
            for spec in requirement.specifier:
                if spec.operator in ("==", "===", "~=") and "*" not in spec.version:
                    return Version(spec.version)
    return None


def _pyproject_requirements(path: str) -> list[str]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        data: dict[str, Any] = tomllib.loads(_read(path))
    except tomllib.TOMLDecodeError:
        return []
    project = data.get("project", {})
    requirements = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        requirements.extend(extra)
    poetry = data.get("tool", {}).get("poetry", {}).get("dependencies", {}).get("jax")
    if isinstance(poetry, str):  # jax = "0.8.3" (exact in Poetry) or "==0.8.3"
        requirements.append("jax" + (poetry if poetry[:1] in "=<>~!" else f"=={poetry}"))
    return [r for r in requirements if isinstance(r, str)]


def _lines(path: str) -> list[str]:
    return _read(path).splitlines()


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return ""
