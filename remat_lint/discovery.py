"""Which files to lint: ``*.py``/``*.pyi``/``*.ipynb`` under the given paths, minus excludes.

Explicitly named files are always linted (as in ruff); directories are walked without following
symlinked directories, so symlink loops cannot recurse. Problems are reported, never raised.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from remat_lint.resolver import Resolver

SUFFIXES = (".py", ".pyi", ".ipynb")


@dataclass
class Discovery:
    files: list[str] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)  # (path, message)


def discover(paths: list[str], resolver: Resolver) -> Discovery:
    """Each entry met while walking is excluded or not by the configuration of its folder."""
    found = Discovery()
    seen: set[str] = set()

    def add(path: str) -> None:
        key = os.path.normpath(path)
        if key not in seen:
            seen.add(key)
            found.files.append(key)

    for path in paths:
        if os.path.isfile(path):
            add(path)
        elif os.path.isdir(path):
            def on_error(error: OSError, path: str = path) -> None:
                found.errors.append((error.filename or path, f"cannot read directory: {error.strerror}"))

            for directory, dirnames, filenames in os.walk(path, onerror=on_error):
                excluded = resolver.in_folder(os.path.abspath(directory)).excluded_in(directory)
                dirnames[:] = sorted(d for d in dirnames if not excluded(d))
                for name in sorted(filenames):
                    full = os.path.join(directory, name)
                    if name.endswith(SUFFIXES) and not excluded(name) and os.path.isfile(full):
                        add(full)
        elif os.path.lexists(path):
            found.errors.append((path, "not a regular file or directory (broken symlink?)"))
        else:
            found.errors.append((path, "no such file or directory"))
    found.files.sort()
    return found
