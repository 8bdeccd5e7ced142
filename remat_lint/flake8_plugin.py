"""flake8 plugin: ``flake8 --select=REM`` gives the CLI's findings, with 0-based columns.

flake8 applies ``# noqa`` itself (per logical line, the semantics the CLI copies), so the plugin
does not. It never raises: flake8 turns any plugin exception into a failed run, so a libcst parse
failure or an internal error becomes one REM000 finding instead.
"""

from __future__ import annotations

import ast
import traceback
from typing import Any, Iterator

from remat_lint import __version__
from remat_lint.engine import PARSE_ERROR, lint_source
from remat_lint.registry import all_rules
from remat_lint.rule import Rule

OFF_BY_DEFAULT = [rule.code for rule in all_rules() if not rule.default_enabled]
# Project-wide rules (REM008: names declared in other files) cannot be decided one file at a time.
PER_FILE_CODES = frozenset(
    rule.code for rule in all_rules() if rule.project_filter.__func__ is Rule.project_filter.__func__  # type: ignore[attr-defined]
)


class Plugin:
    name = "remat-lint"
    version = __version__
    test_paths: tuple[str, ...] = ()

    def __init__(self, tree: ast.AST, lines: list[str], filename: str) -> None:
        self.lines = lines
        self.filename = filename

    @classmethod
    def add_options(cls, option_manager: Any) -> None:
        option_manager.extend_default_ignore(OFF_BY_DEFAULT)

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        # flake8 filters codes after the run; every rule runs and the prefilter keeps that cheap.
        codes = PER_FILE_CODES
        try:
            result = lint_source(self.filename, "".join(self.lines), codes, apply_noqa=False,
                                 is_test_file=_is_test_file(self.filename))
            findings = result.findings
        except Exception as exc:  # never abort the user's flake8 run
            detail = traceback.format_exception_only(type(exc), exc)[-1].strip()
            yield 1, 0, f"{PARSE_ERROR} remat-lint internal error: {detail}", type(self)
            return
        for f in findings:
            yield f.start.row, f.start.column, f"{f.code} {f.message}", type(self)


def _is_test_file(filename: str) -> bool:
    from remat_lint.config import Settings

    return Settings().is_test_file(filename)
