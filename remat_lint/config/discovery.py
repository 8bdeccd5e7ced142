"""Which files to lint: ``*.py``/``*.pyi``/``*.ipynb`` under the given paths, minus excludes and
what ignore files ignore (ignore_files.py, unless ``respect-gitignore = false``).

Explicitly named files are always linted (as in ruff); directories are walked without following
symlinked directories, so symlink loops cannot recurse. Problems are reported, never raised.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from remat_lint.config.ignore_files import IgnoreFiles
from remat_lint.config.resolver import Resolver

SUFFIXES = (".py", ".pyi", ".ipynb")


@dataclass
class Discovery:
    files: list[str] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)  # (path, message)


def discover(paths: list[str], resolver: Resolver) -> Discovery:
    """Each entry met while walking is excluded or not by the configuration of its folder."""
    found = Discovery()
    seen: set[str] = set()
    ignore_files = IgnoreFiles()

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
                settings = resolver.in_folder(os.path.abspath(directory))
                excluded = settings.excluded_in(directory)
                ignored = (
                    ignore_files.ignored_in(directory, {*dirnames, *filenames}) if settings.respect_gitignore else None
                )
                dirnames[:] = sorted(d for d in dirnames if not excluded(d) and not (ignored and ignored(d, True)))
                for name in sorted(filenames):
                    full = os.path.join(directory, name)
                    if (
                        name.endswith(SUFFIXES)
                        and not excluded(name)
                        and not (ignored and ignored(name, False))
                        and os.path.isfile(full)
                    ):
                        add(full)
        elif os.path.lexists(path):
            found.errors.append((path, "not a regular file or directory (broken symlink?)"))
        else:
            found.errors.append((path, "no such file or directory"))
    found.files.sort()
    return found
