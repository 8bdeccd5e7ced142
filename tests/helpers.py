"""Small helpers shared by the tests: lint a snippet the way the CLI would."""

from __future__ import annotations

import textwrap

from remat_lint.engine.lint import lint_source
from remat_lint.findings import Finding
from remat_lint.output.fixes import apply_edits, non_overlapping
from remat_lint.registry import all_rules

ALL_CODES = frozenset(rule.code for rule in all_rules())


def lint(code: str, select: frozenset[str] | set[str] = ALL_CODES, path: str = "example.py") -> list[Finding]:
    result = lint_source(path, textwrap.dedent(code), frozenset(select))
    return sorted(result.findings, key=lambda f: f.sort_key)


def codes(code: str, **kw: object) -> list[str]:
    return [f.code for f in lint(code, **kw)]  # type: ignore[arg-type]


def fix_all(code: str, select: frozenset[str] | set[str] = ALL_CODES, passes: int = 10) -> str:
    """Apply every fix (safe and unsafe) until nothing changes, as `--fix --unsafe-fixes` does."""
    for _ in range(passes):
        fixable = non_overlapping(lint(code, select))
        if not fixable:
            return code
        code = apply_edits(code, [e for f in fixable for e in f.fix.edits])  # type: ignore[union-attr]
    raise AssertionError("fixes did not converge")
