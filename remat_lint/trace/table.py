"""``[tool.remat-lint.trace]`` checked when the configuration is read: a misspelt key or a value of
the wrong type stops every run (exit 2, naming the file and the key), not only a later --trace.

Only parses (no JAX): linting without --trace reads this too.
"""

from __future__ import annotations

from typing import Any

from remat_lint.trace.inputs import InputError, check_target
from remat_lint.trace.shapes import ShapeError

BACKENDS = ("cpu", "gpu", "tpu")
TABLE = "[tool.remat-lint.trace]"


class TableError(ValueError):
    """What is wrong with the table, worded for the user (the caller adds the file)."""


def check(table: Any) -> None:
    if not isinstance(table, dict):
        raise TableError(f"trace must be a table ({TABLE})")
    known = {
        "targets": _targets,
        "timeout": _seconds,
        "backend": _backend,
        "memory-limit-mb": _megabytes,
        "run": _command,
    }
    unknown = sorted(set(table) - known.keys())
    if unknown:
        raise TableError(f"unknown key {unknown[0]!r} in {TABLE} (known: {', '.join(sorted(known))})")
    for key, value in table.items():
        expected = known[key](value)
        if expected:
            raise TableError(f"{TABLE} {key} must be {expected}, got {value!r}")


def _seconds(value: Any) -> str:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
    return "" if ok else "a positive number of seconds"


def _megabytes(value: Any) -> str:
    ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
    return "" if ok else "a positive whole number of megabytes"


def _backend(value: Any) -> str:
    return "" if value in BACKENDS else f"one of {', '.join(BACKENDS)}"


def _command(value: Any) -> str:
    return "" if isinstance(value, str) and value.strip() else "a command line (a string)"


def _targets(value: Any) -> str:
    if not isinstance(value, list):
        return "an array of tables ([[tool.remat-lint.trace.targets]])"
    for index, entry in enumerate(value):
        try:
            check_target(entry)
        except (InputError, ShapeError) as exc:
            raise TableError(f"[[tool.remat-lint.trace.targets]] #{index + 1}: {exc}") from exc
    return ""
