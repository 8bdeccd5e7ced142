"""The ``remat-lint`` command: arguments, output selection and exit codes (ruff's conventions).

Exit codes: 0 no findings, 1 findings, 2 usage, configuration or internal error.
"""

from __future__ import annotations

import argparse
import collections
import sys
import traceback
from pathlib import Path

from remat_lint import __version__
from remat_lint.config import ConfigError, Settings, find_config, load_settings, validate_selectors
from remat_lint.discovery import discover
from remat_lint.engine import diagnostic
from remat_lint.findings import Finding
from remat_lint.registry import all_rules, rule_by_code
from remat_lint.reporters import FORMATS, reporters
from remat_lint.runner import RunResult, display_path, run

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def _codes(value: str) -> list[str]:
    return [code.strip().upper() for code in value.split(",") if code.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="remat-lint",
        description="Find misuse of JAX gradient checkpointing (jax.checkpoint / remat).",
        epilog="`remat-lint rule CODE` explains a rule; `remat-lint rule --all` lists them all.",
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or directories to lint (default: .); - reads stdin")
    parser.add_argument("--version", action="version", version=f"remat-lint {__version__}")
    sel = parser.add_argument_group("rule selection")
    sel.add_argument("--select", type=_codes, metavar="CODES", help="comma-separated codes or prefixes to enable (ALL for every rule)")
    sel.add_argument("--extend-select", type=_codes, metavar="CODES", help="codes or prefixes to enable on top of the selection")
    sel.add_argument("--ignore", type=_codes, metavar="CODES", help="codes or prefixes to disable")
    out = parser.add_argument_group("output")
    out.add_argument("--output-format", choices=FORMATS, default="full")
    out.add_argument("--statistics", action="store_true", help="print a count per rule instead of the findings")
    out.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    out.add_argument("-q", "--quiet", action="store_true", help="print findings only, no summary")
    run_group = parser.add_argument_group("run")
    run_group.add_argument("--config", type=Path, metavar="PATH", help="pyproject.toml to read [tool.remat-lint] from")
    run_group.add_argument("--stdin-filename", metavar="PATH", help="the name of the file read from stdin")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv[:1] == ["rule"]:
            return rule_command(argv[1:])
        if argv[:1] == ["check"]:  # ruff users type `check`
            argv = argv[1:]
        return check_command(build_parser().parse_args(argv))
    except UsageError as exc:
        print(f"remat-lint: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except ConfigError as exc:
        print(f"remat-lint: configuration error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except Exception:  # an internal error is a bug: say so, exit 2, never look like "clean"
        print("remat-lint: internal error, please report it:", file=sys.stderr)
        traceback.print_exc()
        return EXIT_ERROR


def rule_command(argv: list[str]) -> int:
    parser = _Parser(prog="remat-lint rule", description="Explain a rule.")
    parser.add_argument("code", nargs="?", help="a rule code, e.g. REM001")
    parser.add_argument("--all", action="store_true", help="explain every rule")
    args = parser.parse_args(argv)
    if args.all:
        print("\n\n".join(_explain(rule) for rule in all_rules()))
        return EXIT_CLEAN
    if not args.code:
        raise UsageError("give a rule code (e.g. REM001) or --all")
    rule = rule_by_code(args.code)
    if rule is None:
        raise UsageError(f"unknown rule {args.code!r}")
    print(_explain(rule))
    return EXIT_CLEAN


def _explain(rule: type) -> str:
    default = "on" if rule.default_enabled else "off (enable with --extend-select)"
    header = f"# {rule.name} ({rule.code})\n\nSeverity: {rule.severity.value}. Default: {default}."
    return f"{header}\n\n{rule.doc()}"


def load_configuration(args: argparse.Namespace, paths: list[str]) -> Settings:
    config_file = args.config if args.config else find_config(paths)
    if args.config and not args.config.is_file():
        raise ConfigError(f"config file {args.config} not found")
    settings = load_settings(config_file)
    for selectors in (args.select or [], args.extend_select or [], args.ignore or []):
        validate_selectors(selectors)
    if args.select is not None:
        settings.select = args.select
    settings.extend_select += args.extend_select or []
    settings.ignore += args.ignore or []
    return settings


def check_command(args: argparse.Namespace) -> int:
    paths = args.paths or ["."]
    use_stdin = paths == ["-"]
    if "-" in paths and not use_stdin:
        raise UsageError("'-' (stdin) cannot be combined with other paths")
    anchor = [args.stdin_filename] if (use_stdin and args.stdin_filename) else ([] if use_stdin else paths)
    settings = load_configuration(args, anchor)
    for warning in settings.warnings:
        print(f"remat-lint: warning: {warning}", file=sys.stderr)
    enabled = settings.enabled_codes()

    errors: list[Finding] = []
    if use_stdin:
        name = args.stdin_filename or "-"
        result = run([], settings, enabled, stdin=(name, sys.stdin.buffer.read()))
    else:
        found = discover(paths, settings)
        errors = [diagnostic(path, message) for path, message in found.errors]
        result = run(found.files, settings, enabled)
    result.findings = sorted(errors + result.findings, key=lambda f: f.sort_key)
    _display(result)
    return _report(args, result)


def _display(result: RunResult) -> None:
    for finding in result.findings:
        shown = display_path(finding.path)
        if finding.path in result.sources and shown != finding.path:
            result.sources[shown] = result.sources[finding.path]
        finding.path = shown


def _report(args: argparse.Namespace, result: RunResult) -> int:
    findings = result.findings
    if args.statistics:
        counts = collections.Counter((f.code, f.name) for f in findings)
        for (code, name), count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"{count:5d}\t{code}\t{name}")
    else:
        sys.stdout.write(reporters()[args.output_format](findings, result.sources))
    if not args.quiet and args.output_format in ("full", "concise") and not args.statistics:
        n = len(findings)
        print(f"Found {n} finding{'s' if n != 1 else ''} in {result.files} file{'s' if result.files != 1 else ''}." if n else "All checks passed!", file=sys.stderr)
    if findings and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN
