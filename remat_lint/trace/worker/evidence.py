"""Worker side: trace one target under a line recorder, and judge findings against what happened.

A ``Run`` traces a target as the rules predict it fails or behaves: built (Flax ``init``), called
forward, and differentiated (``grad``, traced twice) — all abstractly with ``jax.make_jaxpr``. It
records which lines of the user's file ran and how often (apart: inside a checkpoint wrapper), the
checkpoints of the forward jaxpr, the first exception with its stage and traceback, and the debug
callbacks in the forward and the gradient jaxprs. ``Run.at_site`` says whether the trace went through
a finding's checkpoint (reach.py); only then do the ``judge_*`` functions turn it into a finding's
``Verdict`` (protocol.py), from what the finding's rule declares (``TraceCheck``);
``reason`` is the one line users read.
"""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import jax
import jax.numpy as jnp
from jax._src import core, source_info_util

from remat_lint.trace.protocol import Item, Status, Verdict
from remat_lint.trace.worker.build import Prepared
from remat_lint.trace.worker.jaxpr_rewrite import is_checkpoint
from remat_lint.trace.worker.jaxpr_sites import Site, find_sites
from remat_lint.trace.worker.reach import (
    FrameSite,
    frame_sites,
    is_checkpoint_frame,
    matches_site,
    stack,
    traceback_frames,
)

CALLBACKS = frozenset({"debug_print", "debug_callback", "io_callback"})
EXECUTE_LIMIT = 1 << 20  # elements: run the compiled step on zeros only for small inputs


Span = tuple[int, int, int, int]  # line, column, end line, end column (columns 0-based, as co_positions)


class LineRecorder:
    """Counts executed lines of one file (sys.settrace, only that file's frames are line-traced),
    apart those executed while a checkpoint wrapper was on the stack (``under``), the positions of
    the instructions executed there (``under_positions``: a line runs while a conditional
    expression on it skips the flagged part), and the checkpoint wrappers that ran code of the file
    (``sites``)."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.counts: Counter[int] = Counter()
        self.under: Counter[int] = Counter()
        self.under_positions: set[Span] = set()
        self.sites: list[FrameSite] = []
        self._seen: set[FrameSite] = set()
        self._positions: dict[Any, list[Any]] = {}  # code object -> its instructions' positions

    def _enter(self, frame: Any) -> bool:
        """Whether ``frame`` (of the file) runs inside a checkpoint wrapper; records the wrappers."""
        frames = stack(frame)
        found = frame_sites(frames)
        for site in found:
            if site not in self._seen:
                self._seen.add(site)
                self.sites.append(site)
        return bool(found)

    @contextmanager
    def recording(self) -> Iterator[Counter[int]]:
        counts: Counter[int] = Counter()
        under: Counter[int] = Counter()

        def tracer(inside: bool) -> Any:
            def local(frame: Any, event: str, arg: Any) -> Any:
                if event == "line":
                    counts[frame.f_lineno] += 1
                    if inside:
                        under[frame.f_lineno] += 1
                elif event == "opcode":
                    self._executed(frame)
                return local

            return local

        def global_(frame: Any, event: str, arg: Any) -> Any:
            if frame.f_code.co_filename != self.filename:
                return None
            inside = self._enter(frame)
            frame.f_trace_opcodes = inside
            return tracer(inside)

        previous = sys.gettrace()
        sys.settrace(global_)
        try:
            yield counts
        finally:
            sys.settrace(previous)
            self.counts.update(counts)
            self.under.update(under)

    def _executed(self, frame: Any) -> None:
        code = frame.f_code
        positions = self._positions.get(code)
        if positions is None:
            positions = self._positions[code] = list(code.co_positions())
        where = positions[frame.f_lasti // 2]
        if None not in where:
            self.under_positions.add(where)


@dataclass
class Failure:
    stage: str  # import, build, forward, grad
    exc: BaseException
    lines: list[int]  # lines of the user's file in the traceback, innermost last
    sites: list[FrameSite] = field(default_factory=list)  # checkpoint wrappers in the traceback, outermost first
    under: set[int] = field(default_factory=set)  # ``lines`` that ran inside a checkpoint wrapper

    def raised_at(self, item: Item, code: str) -> bool:
        """The exception was raised by the finding's checkpoint: a wrapper frame of it is on the
        traceback, or the finding's own lines raised inside a checkpoint (or at import, where the
        module-level line itself is the site), or the checkpoint call written there raised it itself
        (``nn.remat(Block(16))``)."""
        if self.stage == "import":
            return bool(set(self.lines) & set(item.span))
        raised_by_site = item.on_site and bool(self.lines) and self.lines[-1] in item.span
        return raised_by_site or bool(self.under & set(item.span)) or matches_site(self.sites, code, item.line)

    @property
    def summary(self) -> str:
        text = str(self.exc).strip()
        first = text.splitlines()[0] if text else ""
        return f"{type(self.exc).__name__}: {first}" if first else type(self.exc).__name__


def failure(stage: str, exc: BaseException, filename: str) -> Failure:
    frames = traceback_frames(exc.__traceback__)
    lines, under, inside = [], set(), False
    for frame, line in frames:
        inside = inside or is_checkpoint_frame(frame)
        if frame.f_code.co_filename == filename:
            lines.append(line)
            if inside:
                under.add(line)
    return Failure(stage, exc, lines, frame_sites(frames), under)


@dataclass
class Run:
    """One target traced; ``build`` produces the Prepared target inside the recorder (Flax init)."""

    name: str
    filename: str
    build: Callable[[], Prepared]
    target_name: str = ""  # the function (or Module class) traced, as the source names it
    source: str = "shape search"  # where its inputs come from, as Prepared.source says
    first_stage: str = "build"  # "run": the exception of a --trace-run, re-raised by ``build``
    prepared: Prepared | None = None
    failure: Failure | None = None
    lines: Counter[int] = field(default_factory=Counter)
    under: Counter[int] = field(default_factory=Counter)  # lines run inside a checkpoint wrapper
    under_positions: set[Span] = field(default_factory=set)  # instructions run inside a checkpoint wrapper
    sites: list[Site] = field(default_factory=list)  # the checkpoints in the forward jaxpr
    wrappers: list[FrameSite] = field(default_factory=list)  # the checkpoint wrappers that ran code of the file
    traces: int = 0
    effects: dict[str, list[tuple[str, tuple[int, ...]]]] = field(default_factory=dict)
    # around the build and the forward trace: what a fallback records (session.with_fallbacks)
    watch: Callable[[], AbstractContextManager[Any]] = nullcontext
    # a recorded checkpoint call (``lean(w, x)``): the line of the wrap it went through (``lean = ...``), which
    # is the checkpoint the replay calls: its other wraps (``fat = jax.checkpoint(dense, ...)``) are not
    wrap: int | None = None

    def execute(self) -> None:
        recorder = LineRecorder(self.filename)
        stage = self.first_stage
        try:
            with recorder.recording():
                with self.watch():
                    self.prepared = p = self.build()
                    self.name = p.name
                    stage = "forward"
                    forward = jax.make_jaxpr(p.fun)(*p.args, **p.kwargs).jaxpr
                self.sites = find_sites(forward)
                self.effects["forward"] = _effects(forward, self.filename, checkpointed_only=True)
                self.traces += 1
                if p.differentiate:
                    stage = "grad"
                    grad = jax.grad(p.fun, argnums=tuple(range(len(p.args))))
                    for _ in range(2):  # twice: effects that run per trace show up twice
                        jaxpr = jax.make_jaxpr(grad)(*p.args, **p.kwargs).jaxpr
                        self.traces += 1
                    self.effects["grad"] = _effects(jaxpr, self.filename)
        except Exception as exc:
            self.failure = failure(stage, exc, self.filename)
        self.lines = recorder.counts
        self.under = recorder.under
        self.under_positions = recorder.under_positions
        self.wrappers = recorder.sites
        if self.wrap is not None:
            self.sites = [replace(s, wrap=self.wrap) if not s.path else s for s in self.sites]
            self.wrappers = [w if self._called_here(w) else replace(w, wrap=self.wrap) for w in self.wrappers]

    def _called_here(self, site: FrameSite) -> bool:
        """A checkpoint called from this file, not by the replay itself (one nested in the replayed body)."""
        return any(os.path.realpath(file) == os.path.realpath(self.filename) for file, _ in site.calls)

    def at_site(self, item: Item, code: str) -> bool:
        """This trace went through the checkpoint the finding is about: its line is a checkpoint
        equation of the forward jaxpr, or its lines ran inside a checkpoint wrapper."""
        return (
            any(self.under[n] for n in item.span)
            or matches_site([*self.sites, *self.wrappers], code, item.line)
            or bool(self.failure and self.failure.raised_at(item, code))
        )

    def never_reached(self, item: Item, code: str) -> str | None:
        """Why this trace is no evidence that the flagged code ran at the flagged site (None: it
        ran). A finding on a checkpoint call needs that checkpoint in the trace; one in a checkpointed
        body needs the flagged expression (``data["test"]``, else the finding's span) executed inside
        a checkpoint, not only its line: ``a if self.rate > 0 else b`` runs the line and skips ``a``."""
        if item.on_site and matches_site([*self.sites, *self.wrappers], code, item.line):
            return None
        recorded = self.source.startswith("recorded")
        if not any(self.under[n] for n in item.span):  # ``under``: lines run inside a differentiated trace
            if recorded:
                return f"no differentiated program of the run reached line {item.line}"
            return f"tracing {self.name} never reached line {item.line}"
        line, column, end_line, end_column = item.data.get("test") or item.position
        if not (column or end_column):  # no columns: the line is all there is to know
            return None
        if any((line, column) <= (p[0], p[2]) and (p[1], p[3]) <= (end_line, end_column) for p in self.under_positions):
            return None
        who = "the recorded run" if recorded else f"tracing {self.name}"
        return f"{who} ran line {item.line} but not the flagged expression at column {column + 1}"

    @cached_property
    def compiled_executions(self) -> Counter[int] | None:
        """Lines run while the compiled gradient step executes twice on zeros (small inputs only)."""
        p = self.prepared
        if p is None or self.failure is not None:
            return None
        leaves = jax.tree_util.tree_leaves((p.args, p.kwargs))
        if sum(getattr(x, "size", 0) for x in leaves) > EXECUTE_LIMIT:
            return None
        step = jax.grad(p.fun, argnums=tuple(range(len(p.args)))) if p.differentiate else p.fun
        try:
            compiled = jax.jit(step).lower(*p.args, **p.kwargs).compile()
            zeros = jax.tree_util.tree_map(_zeros, (p.args, p.kwargs))
            recorder = LineRecorder(self.filename)
            with recorder.recording():
                for _ in range(2):
                    jax.block_until_ready(compiled(*zeros[0], **zeros[1]))
        except Exception:
            return None
        return recorder.counts

    @cached_property
    def residuals(self) -> list[tuple[str, str]] | None:
        """``saved_residuals`` of the differentiated target: (aval, source) pairs."""
        p = self.prepared
        if p is None or not p.differentiate or self.failure is not None:
            return None
        from jax._src.ad_checkpoint import saved_residuals  # not public in jax 0.10

        return [
            (aval.str_short(short_dtypes=True), str(src)) for aval, src in saved_residuals(p.fun, *p.args, **p.kwargs)
        ]


def _zeros(x: Any) -> Any:
    if isinstance(x, jax.ShapeDtypeStruct):
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            return jax.random.split(jax.random.key(0), x.shape) if x.shape else jax.random.key(0)
        return jnp.zeros(x.shape, x.dtype)
    return x


def _effects(jaxpr: Any, filename: str, checkpointed_only: bool = False) -> list[tuple[str, tuple[int, ...]]]:
    """Callback equations (also in sub-jaxprs) with the lines of ``filename`` in their traceback;
    ``checkpointed_only``: those inside a checkpoint equation."""
    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in CALLBACKS and not checkpointed_only:
            frames = source_info_util.user_frames(eqn.source_info.traceback)
            found.append((eqn.primitive.name, tuple(f.start_line for f in frames if f.file_name == filename)))
        for sub in core.jaxprs_in_params(eqn.params):
            found.extend(_effects(sub, filename, checkpointed_only and not is_checkpoint(eqn)))
    return found


# --- judging ------------------------------------------------------------------------------------------

# The judge of each evidence kind (checks.EVIDENCE), registered with @judges where it is defined:
# (finding, traced target, the module's source) -> a verdict, or None when the trace shows nothing.
Judge = Callable[[Item, Run, str], "Verdict | None"]
JUDGES: dict[str, Judge] = {}


def judges(evidence: str) -> Callable[[Judge], Judge]:
    def register(judge: Judge) -> Judge:
        JUDGES[evidence] = judge
        return judge

    return register


def times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def verdict(status: Status, reason: str, **evidence: Any) -> Verdict:
    return Verdict(status, reason, evidence)


def matches(exc: BaseException, predictions: Sequence[tuple[str, str]]) -> bool:
    """``exc`` is one of the (class name, message) pairs: its message contains that phrase, backticks
    and line breaks aside (``'str' object is not callable`` is not ``'DynamicJaxprTracer' object is
    not callable``, and a shape error that suggests ``static_argnums`` is not REM011's)."""
    names = {c.__name__ for c in type(exc).__mro__}
    actual = " ".join(str(exc).replace("`", "").split())
    return any(name in names and " ".join(text.split()) in actual for name, text in predictions)


def expected_errors(item: Item) -> tuple[tuple[str, str], ...]:
    """What the finding's rule declares its misuse raises (``TraceCheck.raises``)."""
    return item.check.raises if item.check is not None else ()


@judges("exception")
def judge_error(item: Item, run: Run, code: str) -> Verdict | None:
    """For findings that predict an exception: did tracing the target raise it, from the finding's
    checkpoint? (The caller has checked that the trace went through that checkpoint.)"""
    predictions = expected_errors(item)
    fail = run.failure
    where = f"{'grad of ' if fail and fail.stage == 'grad' else ''}{run.name}"
    if fail is not None:
        evidence = {"target": run.name, "stage": fail.stage, "exception": fail.summary, "lines": fail.lines}
        if not matches(fail.exc, expected_errors(item)):
            return verdict("unconfirmed", f"{where} fails first with another error: {fail.summary}", **evidence)
        if not fail.raised_at(item, code):
            return verdict(
                "unconfirmed",
                f"{where} raises {fail.summary}, but not from the checkpoint at line {item.line}",
                **evidence,
            )
        return verdict("confirmed", f"{fail.summary} ({fail.stage}: {where})", **evidence)
    if item.check is None or not item.check.refutes:
        return None
    never = run.never_reached(item, code)
    if never is not None:  # tracing without the error refutes only where the flagged code ran
        return verdict("unconfirmed", never, target=run.name)
    ran = f"{'grad of ' if run.prepared and run.prepared.differentiate else ''}{run.name}"
    names = " or ".join(dict.fromkeys(name for name, _ in predictions))
    return verdict("refuted", f"{ran} traced without the predicted {names}", target=run.name)


def judge_import(item: Item, fail: Failure) -> Verdict:
    evidence = {"stage": "import", "exception": fail.summary, "lines": fail.lines}
    if set(fail.lines) & set(item.span) and matches(fail.exc, expected_errors(item)):
        return verdict("confirmed", f"{fail.summary} (import, line {fail.lines[-1]})", **evidence)
    return verdict("unconfirmed", f"importing the module fails: {fail.summary}", **evidence)


@judges("static-argnames")
def judge_static_argnames(item: Item, run: Run, code: str = "") -> Verdict:
    """REM010 when nothing raised: the argument is traced because jax_remat3 is off."""
    if jax.config.jax_remat3:  # type: ignore[attr-defined]  # a flag: Config sets it as a dynamic attribute
        return verdict("refuted", "jax_remat3 is on: JAX honours static_argnames", target=run.name)
    return verdict(
        "confirmed",
        f"jax_remat3 is off, so static_argnames is ignored; {run.name} traced the argument "
        "(no error with these inputs)",
        target=run.name,
        jax_remat3=False,
    )


@judges("cost")
def judge_cost(item: Item, run: Run, code: str) -> Verdict:
    """REM101-REM106: the claim the rule's ``TraceCheck.cost`` names, checked on compiled costs (costs.py)."""
    try:
        from remat_lint.trace.worker import costs
    except ImportError:
        return verdict("unconfirmed", "cost analysis unavailable")
    p = run.prepared
    assert p is not None and item.check is not None  # a cost check: the rule's TraceCheck, on a prepared target
    if not p.differentiate:
        return verdict(
            "unconfirmed",
            f"{run.name} differentiates itself; compiled costs need the loss it differentiates as a target",
        )
    argnums = tuple(range(len(p.args)))
    return costs.memory_evidence(
        code, p.fun, p.args, p.kwargs, item.line, argnums, claim=item.check.cost, span=item.position
    )


@judges("trace-time-effect")
def judge_side_effect(item: Item, run: Run, code: str = "") -> Verdict:
    """REM201: the statement runs while JAX traces, not when the compiled step runs."""
    hits = sum(run.under[n] for n in item.span)
    if not hits:
        return verdict(
            "unconfirmed", f"line {item.line} did not run inside a checkpoint while tracing {run.name}", target=run.name
        )
    executed = run.compiled_executions
    during = None if executed is None else sum(executed[n] for n in item.span)
    evidence = {
        "target": run.name,
        "traces": run.traces,
        "executions_while_tracing": hits,
        "compiled_calls": 2 if during is not None else 0,
        "executions_in_compiled_calls": during,
    }
    traced = f"line {item.line} ran {times(hits)} while JAX traced {run.name} {times(run.traces)}"
    if during is None:
        return verdict("confirmed", f"{traced}: it runs at trace time", **evidence)
    if during:
        return verdict("refuted", f"{traced}, and {times(during)} in 2 compiled calls", **evidence)
    return verdict("confirmed", f"{traced}, and never in 2 compiled calls of the step", **evidence)


@judges("callback-count")
def judge_callback(item: Item, run: Run, code: str = "") -> Verdict:
    """REM203: a debug callback appears once in the forward jaxpr and twice under grad."""

    def count(stage: str) -> int:
        return sum(1 for _, lines in run.effects.get(stage, []) if set(lines) & set(item.span))

    forward, grad = count("forward"), count("grad")
    evidence = {"target": run.name, "forward": forward, "grad": grad}
    if not forward or "grad" not in run.effects:
        return verdict("unconfirmed", f"no callback from line {item.line} in the traced {run.name}", **evidence)
    if grad > forward:
        return verdict(
            "confirmed",
            f"the callback runs {times(grad)} per step under grad of {run.name} "
            f"({times(forward)} in the forward alone)",
            **evidence,
        )
    return verdict(
        "refuted", f"the callback runs {times(grad)} under grad of {run.name}, as often as in the forward", **evidence
    )


def checkpoint_name_of(item: Item) -> str | None:
    """The name REM008 reports as unknown (its finding's data)."""
    names = item.data.get("names") or [item.data.get("name")]
    return names[0] if names and isinstance(names[0], str) else None


def policy_names(policy: Any) -> set[str]:
    """The names a name policy holds: ``SaveOnlyTheseNames(saveable_names=frozenset(...))`` in jax
    0.10.2, a closure over the names for the offloading policies."""
    values = list(vars(policy).values()) if hasattr(policy, "__dict__") else []
    for cell in getattr(policy, "__closure__", None) or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:  # an empty cell
            continue
    return {
        v for value in values if isinstance(value, (set, frozenset, tuple, list)) for v in value if isinstance(v, str)
    }


def name_policy_traced(item: Item, run: Run) -> bool:
    """REM008 on a policy (``save_only_these_names("hiden")``): a traced checkpoint uses that policy."""
    name = checkpoint_name_of(item)
    return name is not None and any(name in policy_names(site.params["policy"]) for site in run.sites)


@judges("saved-name")
def judge_name(item: Item, run: Run, code: str = "") -> Verdict | None:
    """REM008: saved_residuals of the gradient shows no ``named '<name>'`` entry."""
    name = checkpoint_name_of(item)
    residuals = run.residuals
    if residuals is None or name is None:
        return None
    named = sorted({m.group(1) for _, src in residuals for m in re.finditer(r"named '([^']+)'", src)})
    evidence = {
        "target": run.name,
        "name": name,
        "saved_names": named,
        "residuals": [{"aval": a, "source": s} for a, s in residuals[:20]],
    }
    if name in named:
        return verdict("refuted", f"saved_residuals of grad of {run.name} has `named '{name}'`", **evidence)
    return verdict(
        "confirmed",
        f"saved_residuals of grad of {run.name}: no `named '{name}'` among "
        f"{len(residuals)} residuals (saved names: {', '.join(named) or 'none'})",
        **evidence,
    )
