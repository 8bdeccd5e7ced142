"""flake8 plugin: ``flake8 --select=REM`` gives the CLI's findings, with 0-based columns.

flake8 applies ``# noqa`` itself (per logical line, the semantics the CLI copies), so the plugin
does not. flake8 selects the rules (its own ``--select``/``--ignore``); the ``[tool.remat-lint]``
configuration that governs each file (resolver.py) gives its ``test-paths`` and
``per-file-ignores``, so both entry points judge a file alike. It never raises: flake8 turns any plugin exception into a failed run, so a libcst parse
failure or an internal error becomes one REM000 finding instead.
"""

from __future__ import annotations

import ast
import functools
import os
import traceback
from typing import TYPE_CHECKING, Any, Iterator

from remat_lint import __version__
from remat_lint.config import jax_version
from remat_lint.config.settings import ConfigError
from remat_lint.engine.prefilter.stages import prefilter_for
from remat_lint.engine.results import PARSE_ERROR, project_codes
from remat_lint.registry import rule_index

if TYPE_CHECKING:
    from remat_lint.config.resolver import Resolver

OFF_BY_DEFAULT = [rule.code for rule in rule_index() if not rule.default_enabled]
CODES = frozenset(rule.code for rule in rule_index())


class Plugin:
    name = "remat-lint"
    version = __version__
    test_paths: tuple[str, ...] = ()
    codes = CODES  # the rules flake8 will report (parse_options)

    def __init__(self, tree: ast.AST, lines: list[str], filename: str) -> None:
        self.tree = tree
        self.lines = lines
        self.filename = filename

    @classmethod
    def add_options(cls, option_manager: Any) -> None:
        option_manager.extend_default_ignore(OFF_BY_DEFAULT)

    @classmethod
    def parse_options(cls, options: Any) -> None:
        """Run only the rules flake8 will report: an unselected rule's prefilter (REM301:
        "scan") would make files worth a parse for nothing."""
        try:
            from flake8.style_guide import Decision, DecisionEngine

            decide = DecisionEngine(options).decision_for
            cls.codes = frozenset(code for code in CODES if decide(code) is Decision.Selected)
        except Exception:  # another flake8 version: run every rule, flake8 filters
            cls.codes = CODES

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        # The same prefilter as the CLI, on flake8's lines and tree: libcst (0.3 s to import) is
        # imported only when a file passes, or when a file it imports needs a parse.
        if not self.codes:
            return
        source = "".join(self.lines)
        kept = prefilter_for(self.codes).keeps(source, self.tree)
        undecodable = _undecodable(self.filename) if kept and not source.isascii() else None
        if undecodable is not None:  # flake8 fell back to Latin-1; Python (and the CLI) reject the file
            yield 1, 0, f"{PARSE_ERROR} {undecodable}", type(self)
            return
        try:
            from remat_lint.cache.result_cache import Cache, folder
            from remat_lint.engine.results import FileResult
            from remat_lint.engine.runner import ProjectPass
            from remat_lint.engine.unsaved import Unsaved

            # The project-wide rules flake8 selects beyond the configuration's (REM301) need every file's facts.
            resolver = _resolver(tuple(sorted(project_codes(self.codes).intersection(OFF_BY_DEFAULT))), os.getcwd())
            settings = resolver(self.filename)
            result = FileResult(self.filename)
            if kept:  # else it may still call another module's wrap wrongly (REM012): the project phase tells
                from remat_lint.engine.lint import lint_source

                result = lint_source(
                    self.filename,
                    source,
                    settings.codes_for(self.filename, self.codes),
                    apply_noqa=False,
                    facts=project_codes(settings.enabled_codes()),
                    is_test_file=settings.is_test_file(self.filename),
                    tree=self.tree,
                    defer_project=True,
                )
            # Project-wide rules (REM008, REM101) see the other files as the CLI does, through the same cache.
            cache = Cache(folder(settings.root, settings.cache_dir))
            ProjectPass([self.filename], resolver, cache=cache, unsaved=Unsaved.of({self.filename: source}))([result])
            findings = result.findings
            jax_version.retarget(findings, settings.jax_target()[0])
        except ConfigError as exc:  # flake8 cannot exit 2 for us: say it on the file
            yield 1, 0, f"{PARSE_ERROR} remat-lint configuration error: {exc}", type(self)
            return
        except Exception as exc:  # never abort the user's flake8 run
            detail = traceback.format_exception_only(type(exc), exc)[-1].strip()
            yield 1, 0, f"{PARSE_ERROR} remat-lint internal error: {detail}", type(self)
            return
        for f in findings:
            yield f.start.row, f.start.column, f"{f.code} {f.title}", type(self)


def _undecodable(filename: str) -> str | None:
    """The CLI's REM000 message when the file's bytes are not valid in its declared encoding."""
    from remat_lint.engine.runner import decode_source
    from remat_lint.findings import Finding

    try:
        with open(filename, "rb") as handle:
            decoded = decode_source(filename, handle.read())
    except OSError:  # stdin, or gone: flake8's text is all there is
        return None
    return decoded.message if isinstance(decoded, Finding) else None


@functools.lru_cache(maxsize=1)
def _resolver(extend_select: tuple[str, ...], cwd: str) -> Resolver:
    """The process's resolver. ``cwd`` is part of the key: a file with no configuration above it
    follows the working directory's, and one process (an editor's flake8) may lint several projects."""
    from remat_lint.config.resolver import Resolver
    from remat_lint.config.settings import RuleSelection

    return Resolver(RuleSelection(extend_select=extend_select) if extend_select else None)
