"""Module naming: the dotted name a file is imported as, from its path below the project root."""

from __future__ import annotations

import os

# A reference to a name as one module writes it: (level, dotted). level 0 is an absolute import,
# n > 0 a relative one (``from ..a import b``: 2, "a.b"), LOCAL a top-level name of the module itself.
Ref = tuple[int, str]
LOCAL = -1
# Packages whose functions no project module defines: their calls are left out of the summary, and
# a file's imports of them are not followed (a project vendoring jax would read all of it).
LIBRARIES = frozenset({"jax", "flax", "numpy", "haiku", "equinox", "optax", "functools", "math", "os", "typing"})


def module_names(relpath: str) -> list[str]:
    """The names a file below the project root can be imported as: ``pkg/mod.py`` -> ``pkg.mod``,
    ``pkg/__init__.py`` -> ``pkg``, and without a leading ``src`` folder (the src layout)."""
    parts = relpath.replace(os.sep, "/").removesuffix(".pyi").removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts.pop()
    if not parts or not all(part.isidentifier() for part in parts):
        return []
    names = [".".join(parts)]
    if parts[0] == "src" and len(parts) > 1:
        names.append(".".join(parts[1:]))
    return names


def is_package(path: str) -> bool:
    return os.path.basename(path) in ("__init__.py", "__init__.pyi")


def absolute(ref: Ref, module: str, package: bool) -> str | None:
    """``ref`` as written in ``module`` made absolute (a package's ``__init__`` is its own package)."""
    level, dotted = ref
    if level == LOCAL:
        return f"{module}.{dotted}"
    if level == 0:
        return dotted
    parts = module.split(".") if package else module.split(".")[:-1]
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join([*base, dotted] if dotted else base) or None


def import_ref(qname: str) -> Ref:
    """A name as an import spells it (``..config.POLICY``, ``pkg.constants.POLICY``) as a Ref."""
    dotted = qname.lstrip(".")
    return (len(qname) - len(dotted), dotted)
