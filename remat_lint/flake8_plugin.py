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
from remat_lint.prefilter import prefilter_for
from remat_lint.registry import rule_index
from remat_lint.results import PARSE_ERROR

OFF_BY_DEFAULT = [rule.code for rule in rule_index() if not rule.default_enabled]
# Project-wide rules (REM008: names declared in other files) cannot be decided one file at a time.
PER_FILE_CODES = frozenset(rule.code for rule in rule_index() if not rule.project_wide)
_WORDS = frozenset(word for rule in rule_index() if rule.code in PER_FILE_CODES for word in rule.prefilter_words)


class Plugin:
    name = "remat-lint"
    version = __version__
    test_paths: tuple[str, ...] = ()

    def __init__(self, tree: ast.AST, lines: list[str], filename: str) -> None:
        self.tree = tree
        self.lines = lines
        self.filename = filename

    @classmethod
    def add_options(cls, option_manager: Any) -> None:
        option_manager.extend_default_ignore(OFF_BY_DEFAULT)

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        # flake8 filters codes after the run; every rule runs and the prefilter keeps that cheap.
        # The same prefilter as the CLI, on flake8's lines and tree: most files end here, and
        # libcst (0.3 s to import) is imported only when a file passes.
        source = "".join(self.lines)
        if not prefilter_for(_WORDS).keeps(source, self.tree):
            return
        try:
            from remat_lint.engine import lint_source

            result = lint_source(self.filename, source, PER_FILE_CODES, apply_noqa=False,
                                 is_test_file=_is_test_file(self.filename), tree=self.tree)
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
