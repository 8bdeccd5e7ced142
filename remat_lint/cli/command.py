"""The ``remat-lint`` command: arguments, output selection and exit codes (ruff's conventions).

Exit codes: 0 no findings, 1 findings, 2 usage, configuration or internal error.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import gc
import os
import sys
from pathlib import Path
from typing import Any, NoReturn, TextIO, TypeVar

from remat_lint import __version__
from remat_lint.cache import recording
from remat_lint.cache.replay import CACHE_DIR_VARIABLE
from remat_lint.cache.result_cache import DEFAULT_DIR, Cache
from remat_lint.cache.result_cache import folder as cache_folder
from remat_lint.config import jax_version
from remat_lint.config.discovery import discover
from remat_lint.config.resolver import Resolver
from remat_lint.config.settings import ConfigError, RuleSelection, Settings, parse_overrides, validate_selectors
from remat_lint.engine.results import diagnostic
from remat_lint.engine.runner import RunResult, decode_source, default_jobs, project_root, run
from remat_lint.engine.sources import SUFFIX as NOTEBOOK
from remat_lint.engine.sources import display_path, in_cells
from remat_lint.findings import Finding
from remat_lint.output import autofix
from remat_lint.output.reporters import FORMATS, reporter

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
_T = TypeVar("_T")


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _codes(value: str) -> list[str]:
    codes = [code.strip().upper() for code in value.split(",")]
    if not all(codes):
        raise argparse.ArgumentTypeError(f"empty rule selector in {value!r} (give codes, prefixes or ALL)")
    return codes


def _extra_output(value: str) -> tuple[str, str]:
    form, sep, path = value.partition("=")
    if not sep or form not in FORMATS or not path:
        raise argparse.ArgumentTypeError(f"expected FORMAT=PATH with FORMAT one of {', '.join(FORMATS)}, got {value!r}")
    return form, path


def _version(value: str) -> str:
    try:
        jax_version.parse(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc
    return value


def _jobs(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}")
    return int(value)


def _globs(value: str) -> list[str]:
    globs = [glob.strip() for glob in value.split(",")]
    if not all(globs):
        raise argparse.ArgumentTypeError(f"empty glob in {value!r}")
    return globs


def _per_file(value: str) -> tuple[str, list[str]]:
    glob, sep, codes = value.rpartition(":")
    if not sep or not glob:
        raise argparse.ArgumentTypeError(f"expected GLOB:CODES, e.g. 'tests/*:REM007', got {value!r}")
    return glob, _codes(codes)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="remat-lint",
        description="Find misuse of JAX gradient checkpointing (jax.checkpoint / remat).",
        epilog="`remat-lint rule CODE` explains a rule; `remat-lint rule --all` lists them all. "
        "`remat-lint server` is the Language Server (docs/editors.md).",
    )
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="files or directories to lint (default: .); - reads stdin"
    )
    parser.add_argument("--version", action="version", version=f"remat-lint {__version__}")
    sel = parser.add_argument_group("rule selection")
    sel.add_argument(
        "--select",
        type=_codes,
        metavar="CODES",
        help="comma-separated codes or prefixes to enable (ALL for every rule)",
    )
    sel.add_argument(
        "--extend-select", type=_codes, metavar="CODES", help="codes or prefixes to enable on top of the selection"
    )
    sel.add_argument("--ignore", type=_codes, metavar="CODES", help="codes or prefixes to disable")
    out = parser.add_argument_group("output")
    out.add_argument("--output-format", choices=FORMATS, default="full")
    out.add_argument("-o", "--output-file", metavar="PATH", help="write the findings to PATH instead of stdout")
    out.add_argument(
        "--extra-output",
        type=_extra_output,
        action="append",
        default=[],
        metavar="FORMAT=PATH",
        help="also write the findings of this run in FORMAT to PATH (repeatable), e.g. sarif=remat-lint.sarif",
    )
    out.add_argument("--statistics", action="store_true", help="print a count per rule instead of the findings")
    out.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    out.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the full and concise output (auto: on a terminal, unless NO_COLOR is set; FORCE_COLOR forces it)",
    )
    out.add_argument("-q", "--quiet", action="store_true", help="print findings only, no summary")
    fix = parser.add_argument_group("fixes")
    fix.add_argument(
        "--fix",
        action=argparse.BooleanOptionalAction,
        help="apply safe fixes (files are rewritten in place); --no-fix overrides `fix = true` in configuration",
    )
    fix.add_argument(
        "--fix-only",
        action="store_true",
        help="apply safe fixes and report nothing else: exit 0 (with --exit-non-zero-on-fix: 1 when something was fixed)",
    )
    fix.add_argument(
        "--show-fixes",
        action="store_true",
        help="list the fixes applied per file and rule (without --fix: the fixes available)",
    )
    fix.add_argument("--unsafe-fixes", action="store_true", help="with --fix or --diff: apply unsafe fixes too")
    fix.add_argument(
        "--diff",
        action="store_true",
        help="print the fixes as a unified diff and write nothing; exit 1 if there are any",
    )
    fix.add_argument(
        "--add-noqa",
        action="store_true",
        help="add a `# noqa: CODE` to every line with a finding (adopting on existing code), then exit 0",
    )
    fix.add_argument(
        "--exit-non-zero-on-fix",
        action="store_true",
        help="with --fix or --fix-only: exit 1 when something was fixed, even if nothing remains",
    )
    run_group = parser.add_argument_group("run")
    run_group.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="PATH|KEY=VALUE",
        help="a pyproject.toml or remat-lint.toml to read for every file, or a TOML `key = value` of "
        "[tool.remat-lint] that wins over every configuration (repeatable), e.g. --config 'ignore = [\"REM203\"]'",
    )
    run_group.add_argument(
        "--target-jax-version",
        type=_version,
        metavar="VERSION",
        help="word findings for this JAX version (default: the project's pin, else the installed jax)",
    )
    run_group.add_argument(
        "--show-settings", action="store_true", help="print the settings that govern the first PATH, then exit"
    )
    run_group.add_argument("--show-files", action="store_true", help="print the files that would be linted, then exit")
    run_group.add_argument("--stdin-filename", metavar="PATH", help="the name of the file read from stdin")
    run_group.add_argument(
        "-j", "--jobs", type=_jobs, default=0, metavar="N", help="worker processes (default: all cores)"
    )
    run_group.add_argument("--no-cache", action="store_true", help="neither read nor write the result cache")
    run_group.add_argument(
        "--cache-dir",
        metavar="PATH",
        help=f"the cache folder (default: ${CACHE_DIR_VARIABLE}, else the configuration's cache-dir, else {DEFAULT_DIR})",
    )
    run_group.add_argument("--ignore-noqa", action="store_true", help="report findings whatever `# noqa` comments say")
    run_group.add_argument(
        "--force-exclude",
        action="store_true",
        help="apply exclude/extend-exclude to files named on the command line too (pre-commit passes every file)",
    )
    files = parser.add_argument_group("file selection (each wins over the configuration files)")
    files.add_argument(
        "--exclude",
        type=_globs,
        action="append",
        metavar="GLOBS",
        help="comma-separated globs to exclude, instead of `exclude`",
    )
    files.add_argument(
        "--extend-exclude", type=_globs, action="append", metavar="GLOBS", help="globs to exclude on top of `exclude`"
    )
    files.add_argument(
        "--per-file-ignores",
        type=_per_file,
        action="append",
        metavar="GLOB:CODES",
        help="codes to ignore in the files GLOB matches, instead of `per-file-ignores` (repeatable), e.g. 'tests/*:REM007'",
    )
    files.add_argument(
        "--extend-per-file-ignores",
        type=_per_file,
        action="append",
        metavar="GLOB:CODES",
        help="like --per-file-ignores, on top of those configured",
    )
    files.add_argument(
        "--respect-gitignore",
        action=argparse.BooleanOptionalAction,
        help="skip what .gitignore, .ignore and .git/info/exclude ignore (default: on; `respect-gitignore`)",
    )
    trace = parser.add_argument_group("dynamic mode (runs your code in worker processes)")
    trace.add_argument("--trace", action="store_true", help="confirm findings by tracing the code with JAX")
    trace.add_argument("--trace-timeout", type=float, metavar="SECONDS", help="per-module worker timeout (default 120)")
    trace.add_argument(
        "--backend", choices=("cpu", "gpu", "tpu"), help="JAX backend for --trace (default: JAX's default)"
    )
    trace.add_argument(
        "--trace-run",
        metavar="CMD",
        help='with --trace: run CMD (e.g. "python -m pytest -q tests") and check findings at the shapes it differentiates',
    )
    trace.add_argument(
        "--memory-budget",
        metavar="BUDGET",
        help="with --trace: per differentiated target, the checkpoint policies with the fewest FLOPs whose peak temp fits "
        "BUDGET (bytes: 12GiB; or a fraction of the no-checkpoint peak: 0.5)",
    )
    trace.add_argument(
        "--plot", metavar="FILE", help="with --memory-budget: draw the memory/FLOPs trade-off to FILE (.svg or .png)"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    # A lint allocates millions of short-lived ast and libcst nodes: at the default threshold (700)
    # the cycle collector took 15 % of a cold run's CPU on jax+flax; at 100,000, peak RSS +4 %.
    previous = gc.get_threshold()
    gc.set_threshold(100_000, 10, 10)
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    finally:
        gc.set_threshold(*previous)


def _main(argv: list[str]) -> int:
    try:
        if argv[:1] == ["rule"]:
            return rule_command(argv[1:])
        if argv[:1] == ["server"]:  # the Language Server: pygls is imported only here
            from remat_lint.server import main as server

            return server(argv[1:])
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
    except BrokenPipeError:  # the reader closed the pipe: the launcher ends the run quietly
        raise
    except Exception:  # an internal error is a bug: say so, exit 2, never look like "clean"
        import traceback

        print("remat-lint: internal error, please report it:", file=sys.stderr)
        traceback.print_exc()
        return EXIT_ERROR


def rule_command(argv: list[str]) -> int:
    parser = _Parser(prog="remat-lint rule", description="Explain a rule.")
    parser.add_argument(
        "code", nargs="?", help="a rule code, a code prefix (REM1: those rules) or a name, e.g. policy-not-callable"
    )
    parser.add_argument("--all", action="store_true", help="explain every rule")
    parser.add_argument(
        "--output-format",
        choices=("text", "json"),
        default="text",
        help="json: ruff's `rule --output-format json` fields (a list with --all or a prefix)",
    )
    args = parser.parse_args(argv)
    from remat_lint.docs import explain, explanation
    from remat_lint.registry import rule_index  # the docs come from the rules' sources: no rule is imported

    single = False  # a code or a name asks for one rule (an object in json, as ruff prints it)
    if args.all:
        rules = list(rule_index())
    elif not args.code:
        raise UsageError("give a rule code, prefix or name (e.g. REM001, REM1, policy-not-callable) or --all")
    else:
        one = next((r for r in rule_index() if args.code.upper() == r.code or args.code.lower() == r.name), None)
        single = one is not None
        rules = [one] if one is not None else [r for r in rule_index() if r.code.startswith(args.code.upper())]
        if not rules:
            raise UsageError(f"unknown rule {args.code!r}")
    if args.output_format == "json":
        import json

        shown = [explanation(rule) for rule in rules]
        print(json.dumps(shown[0] if single else shown, indent=2))
    else:
        print("\n\n".join(explain(rule) for rule in rules))
    return EXIT_CLEAN


def load_configuration(args: argparse.Namespace) -> Resolver:
    """The configuration of every file: the nearest one above it, or ``--config PATH``; the command
    line's keys and selection apply on top of each."""
    files = [Path(value) for value in args.config if "=" not in value or os.path.isfile(value)]
    for file in files:
        if not file.is_file():
            raise ConfigError(f"config file {file} not found")
    if len(files) > 1:
        raise UsageError(f"--config: give one configuration file, got {', '.join(map(str, files))}")
    for selectors in (args.select or [], args.extend_select or [], args.ignore or []):
        validate_selectors(selectors, "command line: ")
    overrides = None
    if args.select is not None or args.extend_select or args.ignore:
        select = None if args.select is None else tuple(args.select)
        overrides = RuleSelection(select, tuple(args.extend_select or ()), tuple(args.ignore or ()))
    keys = parse_overrides([value for value in args.config if Path(value) not in files])
    flags = {
        "exclude": args.exclude and [glob for globs in args.exclude for glob in globs],
        "extend-exclude": args.extend_exclude and [glob for globs in args.extend_exclude for glob in globs],
        "per-file-ignores": args.per_file_ignores and _mapping(args.per_file_ignores),
        "extend-per-file-ignores": args.extend_per_file_ignores and _mapping(args.extend_per_file_ignores),
        "respect-gitignore": args.respect_gitignore,
    }
    keys.update((key, value) for key, value in flags.items() if value is not None)
    return Resolver(overrides, files[0] if files else None, target_jax_version=args.target_jax_version, keys=keys)


def _mapping(pairs: list[tuple[str, list[str]]]) -> dict[str, list[str]]:
    mapping: dict[str, list[str]] = {}
    for glob, codes in pairs:
        mapping.setdefault(glob, []).extend(codes)
    return mapping


def check_command(args: argparse.Namespace) -> int:
    paths = args.paths or ["."]
    use_stdin = paths == ["-"]
    if args.fix_only:
        args.fix = True
    if "-" in paths and not use_stdin:
        raise UsageError("'-' (stdin) cannot be combined with other paths")
    if args.plot and args.memory_budget is None:
        raise UsageError("--plot needs --memory-budget (it draws the budget's trade-off)")
    if args.memory_budget is not None:
        _check_budget(args)
    if args.trace and (args.fix or args.diff):
        raise UsageError("--trace cannot be combined with --fix or --diff (fix first, then trace)")
    if args.add_noqa and (args.fix or args.diff or args.trace or use_stdin):
        raise UsageError("--add-noqa edits files: it cannot be combined with --fix, --diff, --trace or stdin")
    resolver = load_configuration(args)
    if args.fix is None:  # `fix = true` in configuration, as ruff: not where fixing cannot apply
        args.fix = resolver.default.fix and not (args.diff or args.trace or args.add_noqa)
    if args.show_settings:
        print(show_settings(paths[0] if not use_stdin else (args.stdin_filename or "-"), resolver))
        return EXIT_CLEAN
    return _check(args, paths, use_stdin, resolver)


def _check(args: argparse.Namespace, paths: list[str], use_stdin: bool, resolver: Resolver) -> int:
    jobs, cache = args.jobs or default_jobs(), _cache(args, resolver.default)

    errors: list[Finding] = []
    if use_stdin:
        name = args.stdin_filename or "-"
        data = sys.stdin.buffer.read()
        if args.force_exclude and args.stdin_filename and _force_excluded(name, resolver(name)):
            return _excluded_stdin(args, data)  # as ruff: an editor passes every buffer, excluded or not
        if args.fix or args.diff:
            outcome = autofix.fix_sources(
                {name: decode_source(name, data)}, resolver, unsafe=args.unsafe_fixes, jobs=jobs, cache=cache
            )
            return _fix(args, outcome, [], stdin_data=data)
        result = run([], resolver, stdin=(name, data), jobs=jobs, cache=cache, ignore_noqa=args.ignore_noqa)
    else:
        found = discover(paths, resolver)
        if args.force_exclude:
            found.files = [f for f in found.files if not _force_excluded(f, resolver(f))]
        if not found.files and not found.errors:
            print("remat-lint: warning: No Python files found under the given path(s)", file=sys.stderr)  # ruff's words
        if args.show_files:
            print("".join(f"{display_path(f)}\n" for f in found.files), end="")
            return EXIT_CLEAN
        errors = [diagnostic(path, message) for path, message in found.errors]
        if args.fix or args.diff:
            outcome = autofix.fix_sources(
                autofix.read_sources(found.files), resolver, unsafe=args.unsafe_fixes, jobs=jobs, cache=cache
            )
            return _fix(args, outcome, errors)
        result = run(found.files, resolver, jobs=jobs, cache=cache, ignore_noqa=args.ignore_noqa)
        if args.add_noqa:
            return _add_noqa(result)
    result.findings = sorted(errors + result.findings, key=lambda f: f.sort_key)
    if args.trace:
        if use_stdin:
            raise UsageError("--trace needs files: it imports them")
        return _trace(args, result, found.files, resolver)
    _display(result)
    if not use_stdin and _prints_only(args):
        recording.allow(cache)
    return _report(args, result)


def _prints_only(args: argparse.Namespace) -> bool:
    """Whether the run reports and writes no file (then its output is a function of what it read,
    and the next identical run may replay it)."""
    return not (args.output_file or args.extra_output or args.add_noqa or args.fix or args.diff)


def show_settings(path: str, resolver: Resolver) -> str:
    """ruff's --show-settings: what governs ``path`` (a folder: the files in it)."""
    settings = resolver.in_folder(os.path.abspath(path)) if os.path.isdir(path) else resolver(path)
    target, source = settings.jax_target()
    rows = [
        ("path", path),
        ("config file", str(settings.config_file) if settings.config_file else "(none: defaults)"),
        (
            "project root",
            project_root(
                resolver, [os.path.join(os.path.abspath(path), "-")] if os.path.isdir(path) else [os.path.abspath(path)]
            )
            or "(none: only the linted files)",
        ),
        ("enabled", ", ".join(sorted(settings.enabled_codes()))),
        (
            "per-file-ignores",
            ", ".join(f"{glob} = {codes}" for glob, codes in settings.per_file_ignores.items()) or "(none)",
        ),
        ("exclude", ", ".join([*settings.exclude, *settings.extend_exclude])),
        ("test-paths", ", ".join(settings.test_paths)),
        ("respect-gitignore", str(settings.respect_gitignore).lower()),
        ("fix", str(settings.fix).lower()),
        ("cache-dir", settings.cache_dir or DEFAULT_DIR),
        ("target-jax-version", f"{target or '(newest)'} ({source})"),
    ]
    return "\n".join(f"{name:<19}{value}" for name, value in rows)


def _add_noqa(result: RunResult) -> int:
    added, failures = autofix.add_noqa(result.findings)
    for failure in failures:
        print(f"remat-lint: error: {failure}", file=sys.stderr)
    print(f"Added {added} noqa directive{'s' if added != 1 else ''}.", file=sys.stderr)
    return EXIT_ERROR if failures else EXIT_CLEAN


def _force_excluded(path: str, settings: Settings) -> bool:
    return settings.matches(path, [*settings.exclude, *settings.extend_exclude])


def _excluded_stdin(args: argparse.Namespace, data: bytes) -> int:
    """stdin named as an excluded file: no findings (--fix echoes the source, --diff shows none)."""
    if args.diff:
        return EXIT_CLEAN
    if args.fix:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    return _report(args, RunResult(), out=sys.stderr if args.fix else None)


def _trace(args: argparse.Namespace, result: RunResult, files: list[str], resolver: Resolver) -> int:
    """--trace: judge the findings in worker processes, report them, then the checkpoint sites."""
    from remat_lint.trace.driver import dispatch as driver

    notebooks = [f for f in files if f.endswith(NOTEBOOK)]
    if notebooks:  # a worker imports modules; a notebook's cells are not one
        print(
            f"remat-lint: warning: notebooks are not traced (their findings are static only): {', '.join(notebooks)}",
            file=sys.stderr,
        )
    files = [f for f in files if not f.endswith(NOTEBOOK)]
    outcome = driver.TraceOutcome()
    progress = sys.stderr.isatty() and args.output_format in ("full", "concise")  # never in machine formats
    for settings, group in _by_configuration(files, resolver):  # each file traced with its own [tool.remat-lint.trace]
        options = driver.options_from(
            settings,
            args.trace_timeout,
            args.backend,
            jobs=args.jobs or 1,  # -j N: N workers
            run=args.trace_run,
            memory_budget=args.memory_budget or "",
        )
        options.progress = progress
        paths = set(group)
        outcome.add(driver.trace([f for f in result.findings if f.path in paths], group, settings, options))
    result.findings.extend(outcome.found)  # --trace-run discovery: misuse no spelling shows
    for warning in outcome.warnings:
        print(f"remat-lint: warning: {warning}", file=sys.stderr)
    _display(result)
    # --memory-budget --diff: stdout is the patch alone (as --diff's is); the report goes to stderr
    with contextlib.redirect_stdout(sys.stderr if args.memory_budget is not None and args.budget_diff else sys.stdout):
        code = _report(args, result)
        if args.output_format in ("full", "concise") and not args.statistics:
            sys.stdout.write(driver.format_sites(outcome))
            if outcome.budgets:
                from remat_lint.trace.worker.budget import format_plans

                sys.stdout.write(format_plans(outcome.budgets, outcome.xla_flags))
            if not args.quiet:
                print(driver.describe_run(outcome, result.findings), file=sys.stderr)
    if args.plot and not outcome.budgets:
        print(f"remat-lint: warning: --plot: no program was planned, {args.plot} not written", file=sys.stderr)
    elif args.plot:
        from remat_lint.trace.driver import plot

        try:
            plot.write(outcome.budgets, args.plot)
        except plot.PlotUnavailable as exc:
            raise UsageError(str(exc)) from None
        print(f"remat-lint: wrote {args.plot}", file=sys.stderr)
    if args.memory_budget is not None and (args.budget_fix or args.budget_diff):
        return _budget_fix(args, outcome.budgets, code)
    return code


def _by_configuration(files: list[str], resolver: Resolver) -> list[tuple[Settings, list[str]]]:
    """The files grouped by the configuration that governs each (the working directory's when none)."""
    groups: dict[int, tuple[Settings, list[str]]] = {}
    for path in files:
        settings = resolver(path)
        groups.setdefault(id(settings), (settings, []))[1].append(path)
    return list(groups.values()) or [(resolver.in_folder(os.getcwd()), [])]


def _budget_fix(args: argparse.Namespace, plans: list[Any], code: int) -> int:
    """--memory-budget with --fix/--diff: write (or show) the chosen policies."""
    from remat_lint.trace.driver.budget_fix import fix_plans

    fixed, notes = fix_plans(plans)
    for note in notes:
        print(f"remat-lint: --memory-budget: {note}", file=sys.stderr)
    if args.budget_diff:
        sys.stdout.write("".join(autofix.unified_diff(f) for f in fixed))
        return code
    failures = autofix.write_fixes(fixed)
    for failure in failures:
        print(f"remat-lint: error: {failure}", file=sys.stderr)
    written = len(fixed) - len(failures)
    print(
        f"remat-lint: --memory-budget: policies written in {written} file{'s' if written != 1 else ''}.",
        file=sys.stderr,
    )
    return EXIT_ERROR if failures else code


def _check_budget(args: argparse.Namespace) -> None:
    from remat_lint.trace.worker.budget import parse_budget

    if not args.trace:
        raise UsageError("--memory-budget needs --trace (it compiles your differentiated targets)")
    if args.plot and not args.plot.lower().endswith((".svg", ".png")):
        raise UsageError(f"--plot {args.plot}: the file must end in .svg or .png")
    if args.plot:
        from remat_lint.trace.driver import plot

        try:
            plot.require()  # before tracing, which takes minutes
        except plot.PlotUnavailable as exc:
            raise UsageError(str(exc)) from None
    try:
        parse_budget(args.memory_budget)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    # With a budget, --fix/--diff write the chosen policies (after the trace), not the lint fixes.
    args.budget_fix, args.budget_diff = args.fix, args.diff
    args.fix = args.diff = False


def _cache(args: argparse.Namespace, settings: Settings) -> Cache | None:
    if args.no_cache:
        return None
    return Cache(cache_folder(settings.root, settings.cache_dir, args.cache_dir))


def _display(result: RunResult) -> None:
    for finding in result.findings:
        shown = display_path(finding.path)
        if shown != finding.path:
            _alias(result.sources, finding.path, shown)
            _alias(result.notebooks, finding.path, shown)
        finding.path = shown


def _alias(by_path: dict[str, _T], path: str, shown: str) -> None:
    """``by_path``'s entry for ``path`` under ``shown`` too."""
    if path in by_path:
        by_path[shown] = by_path[path]


def _fix(
    args: argparse.Namespace, outcome: autofix.FixOutcome, errors: list[Finding], stdin_data: bytes | None = None
) -> int:
    """--fix / --diff: print a diff or write the files (stdin: print the fixed source), then report
    what remains; ruff's exit codes."""
    for warning in outcome.warnings:
        print(f"remat-lint: warning: {warning}", file=sys.stderr)
    if args.diff:
        sys.stdout.write("".join(autofix.unified_diff(fixed) for fixed in outcome.changed))
        n = outcome.fixed
        print(f"Would fix {n} finding{'s' if n != 1 else ''}." if n else "No fixes available.", file=sys.stderr)
        return EXIT_FINDINGS if outcome.changed and not args.exit_zero else EXIT_CLEAN
    result = outcome.result
    result.findings = sorted(errors + result.findings, key=lambda f: f.sort_key)
    _display(result)
    if stdin_data is not None:
        sys.stdout.buffer.write(outcome.changed[0].data() if outcome.changed else stdin_data)
        sys.stdout.flush()
    failures = [] if stdin_data is not None else autofix.write_fixes(outcome.changed)
    for failure in failures:
        print(f"remat-lint: error: {failure}", file=sys.stderr)
    if args.fix_only:  # ruff: what was fixed, nothing about what remains
        if outcome.fixed and not args.quiet:
            if args.show_fixes:
                print(autofix.listing(_fixed_title(outcome.fixed) + ":", outcome.applied), file=sys.stderr)
            print(_fixed_title(outcome.fixed) + ".", file=sys.stderr)
        code = EXIT_CLEAN
    else:
        code = _report(args, result, applied=outcome.applied, out=sys.stderr if stdin_data is not None else None)
    if failures:
        return EXIT_ERROR
    if outcome.fixed and args.exit_non_zero_on_fix and not args.exit_zero:
        return EXIT_FINDINGS
    return code


def _report(
    args: argparse.Namespace,
    result: RunResult,
    applied: collections.Counter[tuple[str, str, str]] | None = None,
    out: TextIO | None = None,
) -> int:
    out = out or sys.stdout
    findings = result.findings
    fixed = sum(applied.values()) if applied else 0
    fixable, hidden = autofix.fixable_counts(findings, result.sources, args.unsafe_fixes)
    if args.statistics:
        counts = collections.Counter((f.code, f.name) for f in findings)
        marks = {f.code for f in autofix.fixable(findings, result.sources, args.unsafe_fixes)}
        for (code, name), count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"{count}\t{code}\t{'[*]' if code in marks else '[ ]'} {name}", file=out)
    sources = dict(result.sources)
    shown = in_cells(autofix.honest(findings, result.sources), result.notebooks, sources)  # notebooks: cell positions
    if not args.statistics:
        if args.output_file:
            _write_report(args.output_file, reporter(args.output_format)(shown, sources))
        elif args.output_format in ("full", "concise") and _colour(args.color, out):
            out.write(reporter(args.output_format)(shown, sources, colour=True))  # type: ignore[call-arg]  # Only the full and concise reporters take ``colour`` (checked above).
        else:
            out.write(reporter(args.output_format)(shown, sources))
    for form, path in args.extra_output:
        _write_report(path, reporter(form)(shown, sources))
    out.flush()  # the summary goes to stderr: keep it after the findings on a terminal
    if args.show_fixes and not args.quiet:
        _show_fixes(applied, autofix.fixable(findings, result.sources, args.unsafe_fixes))
    if not args.quiet and (args.statistics or args.output_format in ("full", "concise", "grouped")):
        print(_summary(result, fixed, fixable, hidden), file=sys.stderr)
    counted = [f for f in findings if not (f.trace and f.trace.status == "refuted")]  # --trace disproved the rest
    if counted and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _show_fixes(applied: collections.Counter[tuple[str, str, str]] | None, fixable: list[Finding]) -> None:
    """--show-fixes: the fixes applied, else those --fix would apply (ruff lists only the first)."""
    if applied:
        print(autofix.listing(_fixed_title(sum(applied.values())) + ":", applied) + "\n", file=sys.stderr)
    elif fixable:
        available = collections.Counter((f.path, f.code, f.name) for f in fixable)
        print(autofix.listing(f"{len(fixable)} fixable with the `--fix` option:", available) + "\n", file=sys.stderr)


def _fixed_title(n: int) -> str:
    return f"Fixed {n} error{'s' if n != 1 else ''}"


def _colour(choice: str, out: TextIO) -> bool:
    """``--color``; ``auto`` as ruff decides: NO_COLOR off, FORCE_COLOR on, else a terminal."""
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return out.isatty()


def _write_report(path: str, report: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(report)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _summary(result: RunResult, fixed: int, fixable: int, hidden: int) -> str:
    """ruff's closing lines, word for word: the count (with what --fix did) and what --fix could
    still do. Like ruff, every finding counts as an error, whatever its severity."""
    n = len(result.findings)
    if not n and not fixed:
        return "All checks passed!"
    total = n + fixed
    lines = [
        f"Found {total} error{'s' if total != 1 else ''}" + (f" ({fixed} fixed, {n} remaining)." if fixed else ".")
    ]
    hint = (
        f"{hidden} hidden fix{'es' if hidden != 1 else ''} can be enabled with the `--unsafe-fixes` option"
        if hidden
        else ""
    )
    if fixable:
        lines.append(f"[*] {fixable} fixable with the `--fix` option" + (f" ({hint})." if hint else "."))
    elif hidden:
        lines.append(f"No fixes available ({hint}).")
    return "\n".join(lines)
