"""``python -m remat_lint.trace.worker``: trace one user module and judge its findings.

Request: a ``protocol.WorkerRequest`` as JSON on stdin; each finding carries its rule's ``TraceCheck``.

Result: ``protocol.Reply`` objects, as JSON lines on stdout (``protocol.encode``), flushed one by one
so a timeout keeps what was done::

    {"kind": "backend", "backend": "cpu", "xla_flags": "..."}
    {"kind": "verdict", "finding": 0, "trace": {"status": "confirmed", "reason": "...", "evidence": {...}, ...}}
    {"kind": "site", "site": {"line": 12, "residuals": [...], "policies": [...]}, "target": "loss(f32[8,8])"}

User code writes to stdout as it likes: file descriptor 1 is redirected to stderr before any import.
Every configured target (pyproject, inline comments) is traced, then jaxtyping or a shape search
on the functions that own or call an undecided finding. Only a trace through a finding's checkpoint
is evidence (reach.py); a confirmation from any target beats a refutation from another, so no
verdict depends on their order.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import jax

from remat_lint.trace import devices, isolation
from remat_lint.trace.inputs import inline_targets, parameter_examples, parse_targets, suggestion
from remat_lint.trace.protocol import (
    CPU_XLA_FLAGS,
    RANK,
    AppliedReply,
    BackendReply,
    BudgetReply,
    DiscoveredReply,
    Item,
    NoteReply,
    ProgressReply,
    Reply,
    SiteReply,
    Verdict,
    VerdictReply,
    WorkerRequest,
    encode,
)
from remat_lint.trace.worker import build, fallback
from remat_lint.trace.worker import evidence as ev
from remat_lint.trace.worker.evidence import Run, failure, judge_import, verdict
from remat_lint.trace.worker.jaxpr_sites import attribute
from remat_lint.trace.worker.plan import Definition, plan_module
from remat_lint.trace.worker.reach import matches_site
from remat_lint.trace.worker.recorded import Recorded
from remat_lint.trace.worker.wrap_bindings import wrap_line

AUTO_TARGETS = 6  # functions tried by jaxtyping / shape search per module
# --memory-budget plans programs with declared or recorded shapes; not a checkpointed function the run
# only called (a "recorded call": alone, it is not the program that trains) nor guessed shapes
PLANNED_SOURCES = ("pyproject", "inline comment", "recorded")


def main() -> None:
    isolation.limit_memory()
    request = WorkerRequest.from_json(sys.stdin.read())
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def emit(reply: Reply) -> None:
        out.write(encode(reply) + "\n")
        out.flush()

    Session(request, emit).run()
    sys.stderr.flush()
    _save_coverage()
    os._exit(0)  # threads the user's module left running must not keep the worker alive


def _save_coverage() -> None:
    """When the tests run under coverage (subprocess measurement), write its data: ``os._exit``
    skips the interpreter exit where coverage would."""
    coverage = sys.modules.get("coverage")
    current = coverage.Coverage.current() if coverage is not None else None
    if current is not None:
        current.stop()
        current.save()


class Session:
    def __init__(
        self,
        request: WorkerRequest,
        emit: Callable[[Reply], Any],
        *,
        recorded: Sequence[Recorded] = (),
        calls: Sequence[Recorded] = (),
        errors: Sequence[BaseException] = (),
        search: bool = True,
    ) -> None:
        self.request = request
        self.emit = emit
        self.recorded = recorded  # differentiated calls of a --trace-run (recorder.py)
        self.calls = calls  # and its calls of checkpointed functions
        self.errors = errors  # exceptions raised through checkpointed functions during that run
        self.search = search
        self.path = str(Path(request.path).resolve())
        self.root = str(Path(request.root).resolve())
        self.source = Path(self.path).read_text(encoding="utf-8")
        self.plan = plan_module(self.source)
        self.items = request.findings
        self.sites = set(request.sites)
        self.pending = {item.id: item for item in self.items}
        self.verdicts: dict[int, Verdict] = {}  # the strongest verdict drawn at the finding's site
        self.notes: dict[int, Verdict] = {}  # why a target said nothing, per finding
        self.missed: dict[int, list[str]] = {}  # the targets traced that did not go through the finding's site
        self.reported_sites: set[int] = set()
        self.observed: dict[int, str] = {}  # by id of a recorded program's Run: the test that differentiated it
        self.fallbacks: dict[int, str] = {}  # by id of a fallback Run (fallback.py): why it was traced
        rel = Path(self.path).relative_to(self.root).with_suffix("")
        self.module_ref = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)

    def run(self) -> None:
        jax.config.update("jax_traceback_filtering", "off")  # evidence reads JAX's checkpoint frames (trace/reach.py)
        self.emit(BackendReply(jax.default_backend(), os.environ.get("XLA_FLAGS", "")))
        try:
            module = build.import_module(self.path, self.root)
        except BaseException as exc:  # SystemExit and friends from user code too
            fail = failure("import", exc, self.path)
            for item in self.items:
                self.decide(item, judge_import(item, fail))
            return
        tried: set[str] = set()
        total, compiled = self.planned(), 0
        for run in self.runs(module, tried):
            total = max(total, compiled + 1)
            self.emit(ProgressReply(compiled, total, run.name, process=os.getpid()))
            run.execute()
            compiled += 1
            self.judge_all(run)
            self.site_reports(run)
            self.discover(run)
            if (
                not self.pending
                and not self.sites - self.reported_sites
                and not self.request.memory_budget  # a plan per target
                and run.source != "recorded"
            ):  # discovery judges every recorded program
                break
        self.emit(ProgressReply(compiled, compiled, process=os.getpid()))  # finished
        for item in list(self.pending.values()):
            self.decide(item, self.verdicts.get(item.id) or self.notes.get(item.id) or self.no_inputs(item))

    # --- targets ------------------------------------------------------------------------------------

    def planned(self) -> int:
        """The programs this session means to compile, before fallbacks and a shape search add theirs."""
        specs, _ = parse_targets(self.request.trace, Path(self.request.config_root))
        inline = [target for target in inline_targets(self.source) if target.spec is not None]
        return len(self.recorded) + len(self.calls) + len(self.errors) + len(specs) + len(inline)

    def runs(self, module: Any, tried: set[str]) -> Iterator[Run]:
        def make(name: str, factory: Callable[[], build.Prepared], source: str) -> Run:
            tried.add(name)
            return Run(name, self.path, factory, target_name=name, source=source)

        for rec in self.recorded:
            run = make(rec.name, functools.partial(build.from_recorded, rec), "recorded")
            self.observed[id(run)] = rec.observed
            yield run
        for rec in self.calls:
            run = make(rec.name, functools.partial(build.from_recorded, rec), "recorded call")
            run.wrap = wrap_line(module, self.source, rec.fun)
            yield run
        for exc in self.errors:
            yield Run(
                "the --trace-run command",
                self.path,
                functools.partial(_reraise, exc),
                source="recorded",
                first_stage="run",
            )
        specs, _ = parse_targets(self.request.trace, Path(self.request.config_root))
        for spec in specs:  # every one: it may reach this module through a re-exporting package
            text = (
                self.source
                if Path(spec.path).resolve() == Path(self.path)
                else Path(spec.path).read_text(encoding="utf-8")
            )
            name = spec.ref.split(":")[-1].split(".")[0]
            d = self.plan.definitions.get(name) if text is self.source else _definition(text, name)
            yield from self.with_fallbacks(
                make(
                    name,
                    functools.partial(build.from_spec, spec, module, bool(d and d.differentiates)),
                    "pyproject",
                ),
                module,
                make,
            )
        for target in inline_targets(self.source):
            d = self.plan.definitions.get(target.name)
            if target.spec is None:
                self.note_all(target.name, f"unusable inline comment at line {target.comment_line}: {target.error}")
                continue
            yield from self.with_fallbacks(
                make(
                    target.name,
                    functools.partial(
                        build.from_inline, target.name, target.spec, module, bool(d and d.differentiates)
                    ),
                    "inline comment",
                ),
                module,
                make,
            )
        for d in self.auto_candidates(tried)[:AUTO_TARGETS] if self.search else []:
            yield make(
                d.name,
                functools.partial(build.searched, d.name, d.params, module, d.differentiates, self.predicted),
                "shape search",
            )

    def with_fallbacks(self, run: Run, module: Any, make: Callable[..., Run]) -> Iterator[Run]:
        """A declared target, then, when it could not be built or traced, each function or Flax Module
        owning an undecided finding that its build or trace called before failing, alone at the shapes
        of that call (fallback.py); a finding whose owners the build never reached says so."""
        watched = {item.id: self.fallback_owners(item, module, run.target_name) for item in self.pending.values()}
        candidates = {name: value for names in watched.values() for name, value in names.items()}
        functions = {name: value for name, value in candidates.items() if inspect.isfunction(inspect.unwrap(value))}
        classes = fallback.module_classes(candidates)
        calls: dict[str, fallback.Called] = {}
        module_calls: dict[str, fallback.ModuleCalled] = {}

        @contextmanager
        def watch() -> Iterator[None]:
            with fallback.first_calls(functions) as found, fallback.first_module_calls(classes) as instances:
                try:
                    yield
                finally:
                    calls.update(found)
                    module_calls.update(instances)

        run.watch = watch
        yield run
        if run.failure is None or run.failure.stage not in ("build", "forward"):
            return
        act, done = ("build", "built") if run.failure.stage == "build" else ("trace", "traced")
        failed = f"target {run.name} could not be {done} ({run.failure.summary})"
        for item_id, names in watched.items() if act == "build" else ():  # a trace: judge_all said what it missed
            item = self.pending.get(item_id)
            if item is not None and names and not names.keys() & {*calls, *(c.name for c in module_calls.values())}:
                self.notes[item_id] = verdict(
                    "unconfirmed",
                    f"{failed}; its build never reached {', '.join(sorted(names))} (line {item.line}): "
                    "no call to trace alone",
                )
        for called in calls.values():
            d = self.plan.definitions[called.name]
            again = make(
                called.name,
                lambda c=called, d=d: build.prepare(
                    c.name,
                    functions[c.name],
                    c.args,
                    c.kwargs,
                    argnums=None,
                    differentiate=not d.differentiates,
                    source=fallback.SOURCE,
                ),
                fallback.SOURCE,
            )
            self.fallbacks[id(again)] = f"{failed}; {called.name} was traced alone, as that {act} called it"
            yield again
        for instance in module_calls.values():
            again = make(instance.label, functools.partial(build.from_module_call, instance), fallback.SOURCE)
            self.fallbacks[id(again)] = (
                f"{failed}; {instance.label} was built alone, with the attributes and at the shapes "
                f"that {act} constructed and called it with"
            )
            yield again

    def fallback_owners(self, item: Item, module: Any, target: str) -> dict[str, Any]:
        """The module's functions and classes whose code holds ``item`` (other than ``target``),
        and the classes derived from those (``RematBlock = nn.remat(Block)`` derives from Block)."""
        owners = {
            d.name: getattr(module, d.name)
            for d in self.plan.owners(item.line, item.end_line)
            if d.name != target and callable(getattr(module, d.name, None))
        }
        bases = tuple(value for value in owners.values() if isinstance(value, type))
        derived = {
            name: value
            for name, value in vars(module).items()
            if bases and isinstance(value, type) and issubclass(value, bases) and name != target
        }
        return {**owners, **derived}

    def auto_candidates(self, tried: set[str]) -> list[Definition]:
        """Functions that own an undecided finding or a site, then the functions calling them."""
        owners: dict[str, Definition] = {}
        open_items = [i for i in self.pending.values() if self.drawn_rank(i) < RANK["refuted"]]
        for start, end in [(i.line, i.end_line) for i in open_items] + [
            (s, s) for s in self.sites - self.reported_sites
        ]:
            for d in self.plan.owners(start, end):
                owners.setdefault(d.name, d)
        chain = [*sorted(owners.values(), key=lambda d: d.start), *self.plan.callers(set(owners))]
        return [d for d in chain if d.kind == "function" and d.params and d.name not in tried]

    def predicted(self, exc: Exception) -> bool:
        """Whether an undecided finding predicts ``exc`` (a shape search then has its inputs)."""
        return any(ev.matches(exc, ev.expected_errors(item)) for item in self.pending.values())

    # --- judging ----------------------------------------------------------------------------------------

    def judge_all(self, run: Run) -> None:
        """Every target's verdicts count, whatever the order: a confirmation beats a refutation, and
        a refutation beats a target that says nothing about the finding."""
        if run.prepared is None and run.failure is not None and type(run.failure.exc).__name__ == "NoInputs":
            return  # nothing was traced: the search's own attempts say nothing about the findings
        if (
            run.prepared is None
            and run.failure is not None
            and run.source != "shape search"
            and run.first_stage == "build"
        ):
            self.emit(NoteReply(f"target {run.name} failed at {run.failure.stage}: {run.failure.summary}"))
        for item in list(self.pending.values()):
            fail = run.failure
            if run.prepared is None and fail is not None and not fail.raised_at(item, self.source):
                self.note(item, verdict("unconfirmed", f"target {run.name} could not be built: {fail.summary}"))
                continue
            if not (
                run.at_site(item, self.source)
                or self.wraps_target(item, run)
                or (self.evidence(item) == "saved-name" and ev.name_policy_traced(item, run))
            ):
                self.missed.setdefault(item.id, []).append(run.name)  # no evidence either way
                continue
            result = self.judge(item, run)
            if result is not None:
                self.consider(item, with_shapes(result, run, self.fallbacks.get(id(run), "")))

    def wraps_target(self, item: Item, run: Run) -> bool:
        """REM101-REM104 at ``jax.value_and_grad(jax.checkpoint(loss))``: the target ``loss`` is named
        there (compiled-cost checks wrap it as the line does)."""
        if self.evidence(item) != "cost" or run.prepared is None or run.wrap not in (None, item.line):
            return False  # a recorded call of another wrap of the function (run.wrap) is not this one
        name = run.target_name
        lines = self.source.splitlines()[item.line - 1 : item.end_line]
        return any(re.search(rf"\b{re.escape(name)}\b", line) for line in lines)

    @staticmethod
    def evidence(item: Item) -> str | None:
        return item.check.evidence if item.check is not None else None

    def judge(self, item: Item, run: Run) -> Verdict | None:
        kind = self.evidence(item)
        if kind is None:
            return verdict("unconfirmed", f"this rule has no dynamic check ({item.code})", target=run.name)
        if run.failure is not None and not (kind == "trace-time-effect" and run.failure.stage == "grad"):
            return ev.judge_error(item, run, self.source)
        try:
            result = ev.JUDGES[kind](item, run, self.source)
        except Exception as exc:  # a bug in an evidence check must not hide the other findings
            return verdict("unconfirmed", f"evidence check failed: {type(exc).__name__}: {exc}")
        if result is None:
            return verdict(
                "unconfirmed",
                f"{run.name} traced through the checkpoint without error; {item.code} "
                "describes a misuse that tracing does not always show",
                target=run.name,
            )
        return result

    def site_reports(self, run: Run) -> None:
        p = run.prepared
        if run.failure is not None or p is None or not p.differentiate:
            return
        budgeted = (
            bool(self.request.memory_budget)
            and run.source in PLANNED_SOURCES
            and any(matches_site(run.sites, self.source, line) for line in self.sites)
        )
        if not budgeted and not any(
            matches_site(run.sites, self.source, line) for line in self.sites - self.reported_sites
        ):
            return  # compiling a policy comparison is the expensive part: only for sites not yet reported
        try:
            from remat_lint.trace.worker import residuals
        except ImportError:
            return
        try:
            reports = residuals.site_report(
                p.fun, p.args, p.kwargs, tuple(range(len(p.args))), code=self.source, site_lines=sorted(self.sites)
            )
        except Exception as exc:
            self.emit(NoteReply(f"residual report for {run.name} failed: {type(exc).__name__}: {exc}"))
            return
        for report in reports:
            line = report.get("line")
            if line in self.sites and line not in self.reported_sites:
                self.reported_sites.add(line)
                shown = residuals.with_shapes(report, p.source)
                self.emit(SiteReply({**shown, "devices": devices.device_count((p.args, p.kwargs))}, run.name))
        if budgeted:
            # a line is this module's site, or None (a site of another file, or not matched)
            self.budget_plan(
                run, [r.get("line") if r.get("line") in self.sites else None for r in reports if not r.get("outside")]
            )

    def discover(self, run: Run) -> None:
        """--trace-run: judge every checkpoint of this module that a recorded program applied (discovery.py)."""
        if run.source != "recorded" or run.first_stage == "run":
            return
        if run.failure is not None or run.prepared is None:  # say what failed; no finding from it
            stage, why = (run.failure.stage, run.failure.summary) if run.failure else ("build", "nothing was built")
            self.no_discovery(run, f"the program failed at {stage}: {why}")
            return
        from remat_lint.trace.worker import costs, discovery, scaling

        p = run.prepared
        measured = jax.default_backend() != "cpu" or CPU_XLA_FLAGS in os.environ.get("XLA_FLAGS", "")
        if not measured:  # without the barriers XLA:CPU merges the recomputation away: costs would mislead
            self.emit(NoteReply(f"no compiled-cost discovery in {run.name}: XLA:CPU ran without {CPU_XLA_FLAGS}"))
        try:
            argnums = tuple(range(len(p.args)))
            program = costs.traced(p.fun, p.args, p.kwargs, argnums)
            seen = discovery.observe(
                program,
                self.source,
                sorted(self.sites),
                run.name,
                self.observed.get(id(run), ""),
                measure=measured,
                scaled=lambda: scaling.scaled_program(p.fun, p.args, p.kwargs, argnums),
                items=self.items,
            )
        except Exception as exc:
            self.no_discovery(run, f"{type(exc).__name__}: {exc}")
            return
        self.emit(AppliedReply(seen.applied, seen.unattributed, run.name))
        for found in seen.found:
            self.emit(DiscoveredReply(found.to_json(), run.name))

    def no_discovery(self, run: Run, why: str) -> None:
        """Say why ``run`` gives no discovery. The run applied its checkpoints, which ones is unknown:
        unattributed, so that no site of this module is called unapplied (REM402) for want of it."""
        self.emit(NoteReply(f"no discovery in {run.name}: {why}"))
        self.emit(AppliedReply([], True, run.name))

    def budget_plan(self, run: Run, lines: list[int | None]) -> None:
        """--memory-budget: the policies of this target's program that fit (budget.py)."""
        from remat_lint.trace.worker import budget, costs

        p = run.prepared
        assert p is not None  # site_reports plans only a prepared target
        try:
            program = costs.traced(p.fun, p.args, p.kwargs, tuple(range(len(p.args))))  # site_report's program
            program = dataclasses.replace(program, sites=attribute(program.sites, self.source))  # and its sites
            plan = budget.Search(program, lines).choose(budget.parse_budget(self.request.memory_budget))
        except Exception as exc:
            self.emit(NoteReply(f"--memory-budget for {run.name} failed: {type(exc).__name__}: {exc}"))
            return
        self.emit(BudgetReply({**plan, "devices": devices.device_count((p.args, p.kwargs))}, run.name))

    # --- results ------------------------------------------------------------------------------------------

    def decide(self, item: Item, result: Verdict) -> None:
        self.pending.pop(item.id, None)
        self.emit(VerdictReply(item.id, result))

    def consider(self, item: Item, result: Verdict) -> None:
        """Keep the strongest verdict so far; a confirmation is final (emitted at once)."""
        if result.status == "confirmed":
            self.decide(item, result)
        elif result.rank > self.drawn_rank(item):
            self.verdicts[item.id] = result

    def drawn_rank(self, item: Item) -> int:
        """The rank of the strongest verdict drawn so far for ``item``; 0 for none."""
        drawn = self.verdicts.get(item.id)
        return drawn.rank if drawn is not None else 0

    def note(self, item: Item, result: Verdict) -> None:
        self.notes.setdefault(item.id, result)

    def note_all(self, name: str, reason: str) -> None:
        d = self.plan.definitions.get(name)
        for item in self.pending.values():
            if d and d.start <= item.line <= d.end:
                self.note(item, verdict("unconfirmed", reason))

    def no_inputs(self, item: Item) -> Verdict:
        missed = self.missed.get(item.id)
        if self.recorded or self.calls:  # --trace-run gave its programs: none ran the line
            programs = ", ".join(f"{r.transform} of {r.name}" for r in [*self.recorded, *self.calls])
            return verdict(
                "unconfirmed", f"no differentiated program of the run reached line {item.line} (it recorded {programs})"
            )
        traced = f"no target traced went through line {item.line} ({', '.join(missed)}); " if missed else ""
        owners = [d for d in self.plan.owners(item.line, item.end_line)]
        functions = [d for d in [*owners, *self.plan.callers({d.name for d in owners})] if d.kind == "function"]
        if not functions:
            where = owners[0].name if owners else f"line {item.line}"
            run = (
                f"`{self.request.run}` differentiated no program through it; configure one"
                if self.request.run
                else 'take one from a run of the project (--trace-run "python -m pytest -q tests"), or configure one'
            )
            return verdict(
                "unconfirmed",
                f"{traced}no target reaches {where}: {run} in [[tool.remat-lint.trace.targets]] "
                '(for a Flax Module: module = "pkg.mod:Class", module_args, init_args)',
            )
        d = functions[0]
        return verdict(
            "unconfirmed",
            f"{traced}no abstract inputs: "
            + suggestion(self.module_ref, d.name, parameter_examples(self.source, d.name), self.request.run),
        )


SHAPE_WORDS = {
    "pyproject": "declared in pyproject.toml",
    "inline comment": "declared in an inline comment",
    "jaxtyping": "guessed from jaxtyping annotations",
    "shape search": "guessed by a shape search",
    "recorded": "recorded from the project's run",
    "recorded call": "recorded from a call of the checkpointed function in the project's run",
    fallback.SOURCE: "observed in the declared target's failed build",
}


def with_shapes(result: Verdict, run: Run, fallback_for: str = "") -> Verdict:
    """The verdict says where its shapes came from (and why a fallback ran); guessed shapes never
    refute (a refutation takes the finding out of the exit code)."""
    source = run.prepared.source if run.prepared is not None else run.source
    origin = build.SHAPE_ORIGINS.get(source, "guessed")
    status, reason = result.status, result.reason
    if status == "refuted" and origin == "guessed":
        status, reason = "unconfirmed", f"{reason}; not refuted: the shapes were guessed (declare the inputs to decide)"
    elif status == "refuted" and source in ("recorded call", fallback.SOURCE):
        status, reason = "unconfirmed", f"{reason}; not refuted: the checkpointed function was differentiated alone"
    evidence = {**(result.evidence or {}), "shapes": origin}
    because = f" (fallback: {fallback_for})" if fallback_for else ""
    sharded = devices.device_count((run.prepared.args, run.prepared.kwargs)) if run.prepared is not None else 1
    if sharded > 1:
        because += f"; {devices.per_device_note(sharded)}"
        evidence["devices"] = sharded
    return dataclasses.replace(
        result, status=status, evidence=evidence, reason=f"{reason} [shapes {SHAPE_WORDS[source]}]{because}"
    )


def _reraise(exc: BaseException) -> build.Prepared:
    raise exc


def _definition(source: str, name: str) -> Definition | None:
    try:
        return plan_module(source).definitions.get(name)
    except (SyntaxError, ValueError):  # importing it will say what is wrong
        return None
