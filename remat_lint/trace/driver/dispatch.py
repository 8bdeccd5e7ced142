"""Main process side of --trace: one worker subprocess per module, with a timeout and a memory cap.

Every finding in a traced module gets ``Finding.trace``; a worker that crashes, hangs, runs out of
memory or cannot import the module leaves ``unconfirmed`` findings with the reason, and the run
goes on. User code runs only in workers, never in this process (which never imports JAX).

Memory: workers are not given an ``RLIMIT_AS`` (XLA and CUDA reserve far more address space than
they use: a CPU worker peaks at about 1.5 GB of virtual memory for a few hundred MB resident);
instead this process polls the worker's resident set size and kills it above the cap.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from remat_lint.config.settings import ConfigError, Settings
from remat_lint.findings import Finding
from remat_lint.trace import isolation
from remat_lint.trace.checks import TraceCheck
from remat_lint.trace.driver.progress import Progress, Tail
from remat_lint.trace.inputs import parse_targets
from remat_lint.trace.protocol import (
    CPU_XLA_FLAGS,
    OUT_ENV,
    REQUESTS_ENV,
    SITECUSTOMIZE,
    AppliedReply,
    BackendReply,
    BudgetReply,
    DiscoveredReply,
    Item,
    NoteReply,
    RecordedReply,
    Reply,
    SiteReply,
    Verdict,
    VerdictReply,
    WorkerRequest,
    decode,
)
from remat_lint.trace.units import byte_size, flop_number

DEFAULT_TIMEOUT = 120.0
DEFAULT_MEMORY_MB = 8192
POLL_S = 0.1


@dataclass
class TraceOptions:
    timeout: float = DEFAULT_TIMEOUT
    backend: str | None = None  # None: JAX's default
    memory_mb: int = DEFAULT_MEMORY_MB
    jobs: int = 1  # workers at a time (each holds a JAX process: memory, and XLA's own threads)
    run: str | None = None  # --trace-run: the project's command whose differentiated calls give shapes
    memory_budget: str = ""  # --memory-budget: plan each target's checkpoint policies (budget.py)
    progress: bool = False  # show progress on stderr (a terminal, a format for people: progress.py)


@dataclass
class SiteReport:
    path: str
    target: str
    report: dict[str, Any]


@dataclass
class TraceOutcome:
    sites: list[SiteReport] = field(default_factory=list)
    backends: set[str] = field(default_factory=set)
    xla_flags: str = ""
    warnings: list[str] = field(default_factory=list)
    budgets: list[SiteReport] = field(default_factory=list)  # --memory-budget plans, one per target program
    recorded: list[str] | None = None  # --trace-run: the differentiated calls it recorded ("grad of loss(...)")
    found: list[Finding] = field(default_factory=list)  # --trace-run discovery: findings no static rule made

    def add(self, part: TraceOutcome) -> None:
        """Take in the outcome of another group of files (``--trace A B`` traces each configuration's files apart)."""
        self.sites += part.sites
        self.backends |= part.backends
        self.xla_flags = self.xla_flags or part.xla_flags
        self.warnings += part.warnings
        self.budgets += part.budgets
        if part.recorded is not None:
            self.recorded = (self.recorded or []) + part.recorded
        self.found += part.found


RUN_TIMEOUT_FACTOR = 5  # --trace-run gets this many --trace-timeouts: the command, then judging every module
RUN_OUTPUT_LINES = 8  # of a failing --trace-run command's output, shown in its warning


def options_from(
    settings: Settings,
    timeout: float | None,
    backend: str | None,
    jobs: int = 1,
    run: str | None = None,
    memory_budget: str = "",
) -> TraceOptions:
    """--trace-timeout/--backend/--trace-run, else ``[tool.remat-lint.trace]`` timeout/backend/run/memory-limit-mb."""
    table = settings.trace  # checked when it was read (trace/table.py)
    return TraceOptions(
        timeout=float(timeout if timeout is not None else table.get("timeout", DEFAULT_TIMEOUT)),
        backend=backend or table.get("backend"),
        memory_mb=int(table.get("memory-limit-mb", DEFAULT_MEMORY_MB)),
        jobs=jobs,
        run=run or table.get("run"),
        memory_budget=memory_budget,
    )


def trace(findings: list[Finding], files: list[str], settings: Settings, options: TraceOptions) -> TraceOutcome:
    """Set ``trace`` on every finding of the modules that have findings or checkpoint sites."""
    if importlib.util.find_spec("jax") is None:
        raise ConfigError("--trace needs JAX in this environment: pip install 'remat-lint[trace]'")
    if options.backend not in (None, "cpu"):
        check_backend(options)
    orphans = isolation.Orphans()  # what the traced code orphans is killed when the trace ends
    try:
        return _trace(findings, files, settings, options)
    finally:
        orphans.reap()


def _trace(findings: list[Finding], files: list[str], settings: Settings, options: TraceOptions) -> TraceOutcome:
    outcome = TraceOutcome()
    _, problems = parse_targets(settings.trace, settings.root)
    outcome.warnings.extend(problems)
    by_path: dict[str, list[Finding]] = {}
    for f in findings:
        if f.code != "REM000":
            by_path.setdefault(f.path, []).append(f)
    sites = {path: lines for path in dict.fromkeys([*by_path, *files]) if (lines := site_lines(path)) is not None}
    modules = [p for p in dict.fromkeys([*by_path, *files]) if by_path.get(p) or sites.get(p)]
    # --trace-run: a checkpoint no spelling shows (a factory, a registry) may run code of any module
    watched = [p for p in dict.fromkeys([*by_path, *files]) if p in sites] if options.run else modules
    requests = {
        path: dataclasses.replace(
            module_request(path, by_path.get(path, []), sites.get(path) or [], settings),
            memory_budget=options.memory_budget,
            run=options.run or "",
        )
        for path in watched
    }
    recorded: dict[str, list[Reply]] = {}
    progress = Progress(options.progress)
    if options.run and watched:
        recorded, problems, outcome.recorded = run_recorded(
            options.run, list(requests.values()), settings, options, progress
        )
        outcome.warnings.extend(problems)
    progress.stage, progress.modules = "--trace", (0, len(modules))
    progress.show(force=True)

    def one(path: str) -> None:
        trace_module(
            path,
            by_path.get(path, []),
            requests[path],
            options,
            outcome,
            recorded.get(str(Path(path).resolve()), []),
            progress,
        )
        progress.module_done()

    # Workers are processes; threads only wait for them.
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, options.jobs)) as pool:
        list(pool.map(one, modules))
    progress.done()
    if options.run:
        outcome.found = discovered(recorded, by_path, sites, options.run, settings)
    return outcome


def discovered(
    recorded: dict[str, list[Reply]],
    by_path: dict[str, list[Finding]],
    sites: dict[str, list[int]],
    command: str,
    settings: Settings,
) -> list[Finding]:
    """--trace-run discovery (dynamic_findings.py): every module's findings from the recorded programs."""
    from remat_lint.trace.driver.dynamic_findings import Observed, findings_for

    out = []
    for path, lines in sites.items():
        seen = Observed()
        for reply in recorded.get(str(Path(path).resolve()), []):
            if isinstance(reply, DiscoveredReply):
                seen.found.append(reply.discovered)
            elif isinstance(reply, AppliedReply):
                seen.applied.update(reply.applied)
                seen.unattributed |= reply.unattributed
                seen.programs.append(reply.target)
        out += findings_for(path, seen, by_path.get(path, []), lines, command, settings.codes_for(path))
    return out


def check_backend(options: TraceOptions) -> None:
    """An unavailable ``--backend`` is one clear error (exit 2), not one failure per worker."""
    probe = [sys.executable, "-c", "import jax; jax.devices()"]
    proc = subprocess.run(
        probe, env=worker_env(options), capture_output=True, text=True, timeout=options.timeout, check=False
    )
    if proc.returncode != 0:
        last = next((line for line in reversed(proc.stderr.strip().splitlines()) if line.strip()), "")
        raise ConfigError(f"--backend {options.backend}: JAX cannot start it here: {last[:400]}")


def site_lines(path: str) -> list[int] | None:
    """Lines of the checkpoint sites in ``path`` (None when it cannot be parsed)."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    from remat_lint.analysis.semantic import SemanticModel
    from remat_lint.analysis.sites import find_sites
    from remat_lint.analysis.values import Values
    from remat_lint.engine.runner import read_source
    from remat_lint.findings import Finding

    source = read_source(path)  # the linter's reading (coding cookie, BOM), not a UTF-8 guess
    if isinstance(source, Finding):
        return None
    text = source.text
    if "remat" not in text and "checkpoint" not in text:
        return []
    try:
        module = cst.parse_module(text)
    except (cst.ParserSyntaxError, RecursionError):
        return None
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    model = SemanticModel(module)
    found = find_sites(model, Values(model).entries)
    return sorted({positions[site.node].start.line for site in found})


def import_root(path: str, settings: Settings) -> Path:
    """The directory the module is imported from: the config's directory when it contains the
    file, else the first ancestor that is not a package."""
    file = Path(path).resolve()
    root = settings.root.resolve()
    if settings.config_file is not None and root in file.parents:
        return root / "src" if root / "src" in file.parents else root  # the src layout imports from src/
    directory = file.parent
    while (directory / "__init__.py").is_file() and directory.parent != directory:
        directory = directory.parent
    return directory


def worker_env(options: TraceOptions) -> dict[str, str]:
    env = dict(os.environ)
    if options.backend:
        env["JAX_PLATFORMS"] = options.backend
    if options.backend == "cpu" or (options.backend is None and not _accelerator_plugin()):
        # Keep optimisation barriers on CPU as GPU/TPU do, or recomputation is merged away (README.md,
        # "Dynamic mode").
        env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} {CPU_XLA_FLAGS}".strip()
        env[isolation.MEMORY_VARIABLE] = str(options.memory_mb + isolation.HEADROOM_MB)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def _accelerator_plugin() -> bool:
    """Whether JAX may default to a GPU/TPU here (a plugin or libtpu is installed)."""
    plugins = ("jax_plugins", "jax_cuda12_plugin", "jax_cuda13_plugin", "jax_rocm60_plugin", "libtpu")
    return any(importlib.util.find_spec(name) is not None for name in plugins)


def module_request(path: str, findings: list[Finding], sites: list[int], settings: Settings) -> WorkerRequest:
    return WorkerRequest(
        path=str(Path(path).resolve()),
        root=str(import_root(path, settings)),
        config_root=str(settings.root.resolve()),
        trace=settings.trace,
        findings=[
            Item(
                i,
                f.code,
                f.start.row,
                f.end.row,
                f.start.column,
                f.end.column,
                on_site=f.start.row in sites,
                check=_trace_check(f.code),
                data=f.data,
            )
            for i, f in enumerate(findings)
        ],
        sites=sites,
    )


def trace_module(
    path: str,
    findings: list[Finding],
    request: WorkerRequest,
    options: TraceOptions,
    outcome: TraceOutcome,
    recorded: list[Reply],
    progress: Progress | None = None,
) -> None:
    """One worker for the module; verdicts from the recorded run (``recorded``: its replies for this
    module) count beside the worker's, the stronger one kept (the recorded run's on a tie: it says
    what the project's own program did)."""
    replies, failure = run_worker(request, Path(request.root), options, progress)
    # a site's report from the recorded run replaces one at guessed shapes
    reported = {r.site.get("line") for r in replies if isinstance(r, SiteReply) and r.site.get("shapes") != "guessed"}
    for reply in recorded:
        if isinstance(reply, VerdictReply) and 0 <= reply.finding < len(findings):
            own = next((x for x in replies if isinstance(x, VerdictReply) and x.finding == reply.finding), None)
            if own is None or reply.trace.rank >= own.trace.rank:
                replies = [x for x in replies if x is not own] + [reply]
        elif isinstance(reply, SiteReply) and reply.site.get("line") not in reported:
            at = reply.site.get("line")
            replies = [x for x in replies if not (isinstance(x, SiteReply) and x.site.get("line") == at)] + [reply]
        elif isinstance(reply, (NoteReply, BudgetReply)):
            replies.append(reply)
    for reply in replies:
        if isinstance(reply, VerdictReply) and 0 <= reply.finding < len(findings):
            findings[reply.finding].trace = reply.trace
        elif isinstance(reply, SiteReply):
            outcome.sites.append(SiteReport(path, reply.target, reply.site))
        elif isinstance(reply, BudgetReply):
            outcome.budgets.append(SiteReport(path, reply.target, reply.budget))
        elif isinstance(reply, BackendReply):
            outcome.backends.add(reply.backend)
            outcome.xla_flags = reply.xla_flags
        elif isinstance(reply, NoteReply):
            outcome.warnings.append(f"{path}: {reply.note}")
    # JSON output stays an array of findings: a site's report rides on the findings at its line, and
    # every finding of the module lists all of its sites' reports.
    reports = tuple(site.report for site in outcome.sites if site.path == path)
    budgets = tuple({"target": b.target, **b.report} for b in outcome.budgets if b.path == path)
    for f in findings:
        verdict = f.trace or Verdict("unconfirmed", failure or "the worker gave no result")
        evidence = verdict.evidence
        for report in reports:
            if f.start.row == report.get("line"):
                evidence = {**(evidence or {}), "site": report}
        f.trace = dataclasses.replace(
            verdict, evidence=evidence, sites=reports or verdict.sites, budget=budgets or verdict.budget
        )


def run_recorded(
    command: str,
    requests: list[WorkerRequest],
    settings: Settings,
    options: TraceOptions,
    progress: Progress | None = None,
) -> tuple[dict[str, list[Reply]], list[str], list[str] | None]:
    """--trace-run: the user's command, run from the configuration's folder with JAX's differentiation
    entry points recorded (recorder.py); the replies it wrote per module path, what to warn
    about, and the calls it recorded (None: nothing came back). Its output is kept apart from remat-lint's."""
    with tempfile.TemporaryDirectory(prefix="remat-lint-run-") as tmp:
        hook = Path(tmp, "hook")
        hook.mkdir()
        (hook / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
        requests_file, out_file, output_file = Path(tmp, "requests.json"), Path(tmp, "out.jsonl"), Path(tmp, "output")
        requests_file.write_text(json.dumps([dataclasses.asdict(r) for r in requests], default=str), encoding="utf-8")
        out_file.touch()
        run_progress = progress or Progress(False)
        run_progress.stage = f"--trace-run: running `{command}`"
        env = worker_env(options)
        package_root = str(Path(__file__).resolve().parents[3])  # the user's python imports this remat_lint
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(hook), package_root, env.get("PYTHONPATH", "")) if p)
        env[REQUESTS_ENV], env[OUT_ENV] = str(requests_file), str(out_file)
        token = isolation.mark(env)
        limit = dataclasses.replace(options, timeout=options.timeout * RUN_TIMEOUT_FACTOR)
        with open(output_file, "wb") as output, open(out_file, "rb") as replies:
            proc = subprocess.Popen(
                command,
                shell=True,
                cwd=settings.root,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            reply_tail = Tail(replies.fileno())
            try:
                failure = _watch(proc, limit, lambda: run_progress.follow(reply_tail))
            finally:
                _kill(proc)
                isolation.sweep(token)
            run_progress.follow(reply_tail)  # what it said since the last poll
        by_path: dict[str, list[Reply]] = {}
        recorded: list[str] | None = None
        for raw in out_file.read_text(encoding="utf-8", errors="replace").splitlines():
            decoded = decode(raw)
            if decoded is None:
                continue
            reply, module = decoded
            if isinstance(reply, RecordedReply):
                recorded = (recorded or []) + reply.recorded
            elif module:
                by_path.setdefault(module, []).append(reply)
        warnings = []
        if failure is not None or proc.returncode != 0:
            tail = output_file.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-RUN_OUTPUT_LINES:]
            why = failure or f"exited with {proc.returncode}"
            shown = "".join(f"\n    {line[:300]}" for line in tail)
            warnings.append(f"--trace-run: `{command}` {why}" + (f"; its last output lines:{shown}" if tail else ""))
        if recorded is None:
            warnings.append(
                f"--trace-run: `{command}` recorded nothing (no Python process of it exited normally "
                "with remat-lint importable)"
            )
        elif not recorded:
            warnings.append(
                f"--trace-run: `{command}` never called jax.grad, jax.value_and_grad, jax.vjp or a checkpointed "
                "function of the project: no shapes recorded"
            )
    return by_path, warnings, recorded


def _trace_check(code: str) -> TraceCheck | None:
    from remat_lint.registry import rule_by_code

    rule = rule_by_code(code)
    return getattr(rule, "trace_check", None)


def run_worker(
    request: WorkerRequest, root: Path, options: TraceOptions, progress: Progress | None = None
) -> tuple[list[Reply], str | None]:
    """Run one worker; its replies, and why it stopped early (None when it finished)."""
    env = worker_env(options)
    token = isolation.mark(env)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "remat_lint.trace.worker"],
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=err,
            cwd=root,
            env=env,
            start_new_session=True,
        )
        assert proc.stdin is not None
        proc.stdin.write(request.to_json().encode())
        proc.stdin.close()
        tail, shown = Tail(out.fileno()), progress or Progress(False)
        try:
            failure = _watch(proc, options, lambda: shown.follow(tail, request.path))
        finally:
            # The worker leads its own session: stop it on Ctrl-C, and whatever it started (a data
            # loader, a server) once it is done, in its session or out of it.
            _kill(proc)
            isolation.sweep(token)
        shown.follow(tail, request.path)  # what it said since the last poll
        out.seek(0)
        err.seek(0)
        decoded = [decode(raw) for raw in out.read().decode("utf-8", "replace").splitlines()]
        if failure is None and proc.returncode != 0:
            failure = _crash_reason(proc.returncode, err.read().decode("utf-8", "replace"))
    return [reply for reply, _ in filter(None, decoded)], failure


def _watch(
    proc: subprocess.Popen[bytes], options: TraceOptions, waiting: Callable[[], object] = lambda: None
) -> str | None:
    """Wait for ``proc`` within the options' time and memory; ``waiting`` is called at every poll."""
    deadline = time.monotonic() + options.timeout
    while True:
        try:
            proc.wait(timeout=POLL_S)
            return None
        except subprocess.TimeoutExpired:
            waiting()
        rss = _rss_mb(proc.pid)
        if rss is not None and rss > options.memory_mb:
            _kill(proc)
            return f"the worker exceeded the memory cap ({rss} MiB > {options.memory_mb} MiB; raise memory-limit-mb)"
        if time.monotonic() > deadline:
            _kill(proc)
            return f"timed out after {options.timeout:g} s (raise --trace-timeout)"


def _rss_mb(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError):
        return None
    return None


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the worker leads its own session: its children go too
    except (ProcessLookupError, PermissionError):
        if proc.poll() is None:
            proc.kill()
    proc.wait()


def _crash_reason(returncode: int, stderr: str) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"the worker crashed ({name})"
    last = next((line for line in reversed(stderr.strip().splitlines()) if line.strip()), "")
    return f"the worker failed (exit {returncode}): {last[:300]}"


# --- text output ----------------------------------------------------------------------------------------


def describe_run(outcome: TraceOutcome, findings: list[Finding]) -> str:
    """One line for stderr: where it ran, and how the findings fared."""
    backends = ", ".join(sorted(outcome.backends)) or "no backend (no module was traced)"
    flags = f" with XLA_FLAGS={CPU_XLA_FLAGS}" if CPU_XLA_FLAGS in outcome.xla_flags else ""
    counts = {
        s: sum(1 for f in findings if f.trace and f.trace.status == s) for s in ("confirmed", "refuted", "unconfirmed")
    }
    tally = ", ".join(f"{n} {s}" for s, n in counts.items() if n) or "no findings traced"
    refuted = " (refuted findings do not count in the exit code)" if counts["refuted"] else ""
    line = f"--trace: traced on {backends}{flags}: {tally}{refuted}."
    if outcome.recorded:
        reached = sum(
            1
            for f in findings
            if f.trace and (f.trace.found_by or (f.trace.evidence or {}).get("shapes") == "recorded")
        )  # found_by: made or confirmed by discovery, which judges the recorded programs only
        # one name recorded at several signatures (a parameterised test) is one entry, with its count
        counts = collections.Counter(outcome.recorded)
        names = [f"{n}x {name}" if n > 1 else name for name, n in counts.items()]
        calls = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        line += (
            f"\n--trace-run: recorded {len(outcome.recorded)} differentiated call{'s' if len(outcome.recorded) != 1 else ''}"
            f" ({calls}); {reached} of {len(findings)} finding{'s' if len(findings) != 1 else ''} judged on them."
        )
    return line


# The file in a residual's source as the worker words it (JAX's ``source_info_util.summarize``:
# "output of add from /abs/model.py:23:11 (mlp_block)"): shown relative to the working directory, as findings are.
_SOURCE_FILE = re.compile(r"(?<= from )(?P<file>.+?)(?=:\d+(?::\d+)? \()")


def format_sites(outcome: TraceOutcome) -> str:
    """The residual table and policy comparison of each checkpoint site, for text output."""
    from remat_lint.engine.sources import display_path
    from remat_lint.trace.devices import per_device_note

    out = []
    for site in sorted(outcome.sites, key=lambda s: (s.path, s.report.get("line") or 0)):
        rep = site.report
        guessed = ", at guessed shapes" if rep.get("shapes") == "guessed" else ""
        out.append(f"{display_path(site.path)}:{rep.get('line')}: checkpoint site (traced as {site.target}{guessed})")
        residuals = rep.get("residuals") or []
        out.append(f"  residuals saved for the backward pass: {len(residuals)}")
        for r in residuals:
            source = _SOURCE_FILE.sub(lambda m: display_path(m.group("file")), str(r.get("source", "")))
            out.append(
                f"    {r.get('shape', '')!s:<16} {r.get('dtype', '')!s:<9} {byte_size(r.get('bytes')):>10}  {source}"
            )
        policies = rep.get("policies") or []
        if policies:
            out.append(f"  {'policy':<34} {'residuals':>10} {'temp':>10} {'FLOPs':>12}")
            for p in policies:
                measured = (
                    f"{byte_size(p.get('temp_bytes')):>10} {flop_number(p.get('flops')):>12}"
                    if p.get("compiled", True)
                    else f"{'not compiled':>23}"
                )
                out.append(f"  {p.get('policy')!s:<34} {byte_size(p.get('residual_bytes')):>10} {measured}")
        if rep.get("devices", 1) > 1:
            out.append(f"  {per_device_note(rep['devices'])}; residuals are the global arrays")
        if rep.get("compile_note"):
            out.append(f"  {rep['compile_note']}")
        if rep.get("flops_note"):
            out.append(f"  FLOPs: {rep['flops_note']}")
        if rep.get("recommendation"):
            out.append(f"  recommendation: {rep['recommendation']}")
        out.append("")
    return "\n".join(out) + ("\n" if out else "")
