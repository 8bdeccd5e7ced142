"""Lints a set of files with one configuration: reading, per-file rule selection, the project pass.

Reading problems (unreadable, undecodable files) become REM000 findings; linting goes on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from remat_lint.config import Settings
from remat_lint.engine import FileResult, SourceFile, diagnostic, lint_source, project_filter
from remat_lint.findings import Finding


@dataclass
class RunResult:
    findings: list[Finding] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)  # path -> text, for files with findings
    files: int = 0


def read_source(path: str) -> SourceFile | Finding:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        return diagnostic(path, f"cannot read file: {exc.strerror or exc}")
    return decode_source(path, data)


def decode_source(path: str, data: bytes) -> SourceFile | Finding:
    try:
        return SourceFile.decode(data)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        reason = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        return diagnostic(path, f"cannot decode file: {reason}")


def lint_one(path: str, source: SourceFile | Finding, settings: Settings, enabled: frozenset[str]) -> FileResult:
    if isinstance(source, Finding):
        return FileResult(path, [source])
    codes = settings.codes_for(path, enabled)
    return lint_source(path, source.text, codes, is_test_file=settings.is_test_file(path))


def run(paths: list[str], settings: Settings, enabled: frozenset[str], stdin: tuple[str, bytes] | None = None) -> RunResult:
    """Lint ``paths`` (or one stdin buffer named ``stdin[0]``) and apply the project-wide pass."""
    results: list[FileResult] = []
    texts: dict[str, str] = {}
    if stdin is not None:
        name, data = stdin
        source = decode_source(name, data)
        results.append(lint_one(name, source, settings, enabled))
        if not isinstance(source, Finding):
            texts[name] = source.text
    else:
        for path in paths:
            source = read_source(path)
            results.append(lint_one(path, source, settings, enabled))
            if not isinstance(source, Finding) and results[-1].findings:
                texts[path] = source.text
    project_filter(results, enabled)
    findings = sorted((f for r in results for f in r.findings), key=lambda f: f.sort_key)
    return RunResult(findings, texts, len(results))


def display_path(path: str) -> str:
    """Paths under the working directory are shown relative to it, as ruff does."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel
