"""Compiled memory and FLOPs of a differentiated target, as written and with a checkpoint rewritten.

Runs inside the trace worker (JAX imported, on CPU ``XLA_FLAGS=--xla_disable_hlo_passes=
cse_barrier_expander`` so optimisation barriers survive as on GPU/TPU). The target is traced once to a
jaxpr from abstract inputs; a variant is that jaxpr with the checkpoint equations of one site rewritten
(``jaxpr_rewrite``), never the user's source. Each variant is compiled as
``jit(value_and_grad(f, argnums)).lower(*args).compile()`` (on CPU with ``fast_compile_options``) and measured with
``memory_analysis().temp_size_in_bytes`` and ``cost_analysis()["flops"]``.

Verdicts (``TOLERANCE`` = 1 %, changes smaller than that count as equal), per claim (a rule's
``TraceCheck.cost``):
- ``recompute-for-nothing``, REM101/REM102 (fix: remove the checkpoint): confirmed when, under ``value_and_grad``, the fix saves
  FLOPs and the original saves no memory. For a checkpoint called once, ``grad`` numbers are
  reported alongside (evidence key ``grad``): there a whole-loss or last-stage checkpoint compiles to
  the same program as none. No verdict reads them, so a checkpoint called per layer is not compiled twice more.
- ``cse-lost``, REM103 (fix: ``prevent_cse=True``): confirmed when the fix saves memory, i.e. the saving was lost.
  The fix may cost FLOPs (+2 % measured), so, unlike recompute-for-nothing, it need not save FLOPs.
- ``saves-nothing``, REM104 (fix: remove the checkpoint): confirmed when the original saves no memory and the fix costs
  no FLOPs (such a policy recomputes nothing, so there are no FLOPs to save).
"""

from __future__ import annotations

import ast
import hashlib
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
from jax._src import core
from jax._src.interpreters import partial_eval as pe

from remat_lint.trace.protocol import Status, Verdict
from remat_lint.trace.shapes import format_shape
from remat_lint.trace.units import byte_size, flop_count
from remat_lint.trace.worker.jaxpr_rewrite import Edit, Unsupported, rewrite, walk
from remat_lint.trace.worker.jaxpr_sites import Site, calls_at, find_sites, sites_at, target_at

TOLERANCE = 0.01
MODES = ("value_and_grad", "grad")


@dataclass(frozen=True)
class Costs:
    """What one compile of a differentiated program measured: ``memory_analysis().temp_size_in_bytes``
    and ``cost_analysis()["flops"]`` (NaN when XLA reports none). Differences and sums (the budget
    search's predictions) are Costs too."""

    temp_bytes: int
    flops: float

    def __add__(self, other: Costs) -> Costs:
        return Costs(self.temp_bytes + other.temp_bytes, self.flops + other.flops)

    def __sub__(self, other: Costs) -> Costs:
        return Costs(self.temp_bytes - other.temp_bytes, self.flops - other.flops)

    def __abs__(self) -> Costs:
        return Costs(abs(self.temp_bytes), abs(self.flops))

    @property
    def memory_first(self) -> tuple[int, float]:
        """A sort key: smaller peak temp first, then fewer FLOPs."""
        return (self.temp_bytes, self.flops)

    @property
    def flops_first(self) -> tuple[float, int]:
        """A sort key: fewer FLOPs first, then smaller peak temp."""
        return (self.flops, self.temp_bytes)

    def to_json(self) -> dict[str, float]:
        """As evidence and reports carry it across the worker's JSON lines to the driver."""
        return {"temp_bytes": self.temp_bytes, "flops": self.flops}


def fast_compile_options() -> dict[str, Any] | None:
    """On CPU, LLVM's optimisation level 0: the machine code is never run, and temp bytes (buffer
    assignment) and FLOPs (HLO cost analysis) come from the HLO, which the level leaves alone (measured
    equal on every row of bench/trace_1b.py's table; 34-40 % less compile CPU time at 4 layers)."""
    return {"xla_backend_optimization_level": 0} if jax.default_backend() == "cpu" else None


class NotDifferentiable(Exception):
    """The target's output is not a scalar (or a ``(scalar, aux)`` pair)."""


@dataclass
class Program:
    """A target traced to a jaxpr from abstract inputs, and its compiled costs per variant."""

    closed: core.ClosedJaxpr
    out_tree: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    argnums: int | tuple[int, ...]
    has_aux: bool
    sites: list[Site]
    _cache: dict[Any, Costs] = field(default_factory=dict)  # by variant key (``_key``)
    _by_text: dict[bytes, Costs] = field(default_factory=dict)  # by digest of the lowered program's text
    _residuals: dict[Any, int] = field(default_factory=dict)  # by variant key
    compiles: int = 0

    @classmethod
    def trace(
        cls, fun: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], argnums: int | Sequence[int] = 0
    ) -> Program:
        leaves, in_tree = jax.tree_util.tree_flatten((tuple(args), dict(kwargs)))

        def flat(*xs: Any) -> Any:
            a, k = jax.tree_util.tree_unflatten(in_tree, xs)
            return fun(*a, **k)

        closed, out_shape = jax.make_jaxpr(flat, return_shape=True)(*leaves)
        argnums = argnums if isinstance(argnums, int) else tuple(argnums)
        return cls(
            closed,
            jax.tree_util.tree_structure(out_shape),
            tuple(args),
            dict(kwargs),
            argnums,
            _has_aux(out_shape),
            find_sites(closed.jaxpr),
        )

    def function(self, closed: core.ClosedJaxpr | None = None) -> Callable[..., Any]:
        """The target as a function of the original arguments, evaluating ``closed``."""
        run = core.jaxpr_as_fun(closed or self.closed)

        def g(*args: Any, **kwargs: Any) -> Any:
            return jax.tree_util.tree_unflatten(self.out_tree, run(*jax.tree_util.tree_leaves((args, kwargs))))

        return g

    def flat(self, closed: core.ClosedJaxpr) -> tuple[Callable[..., Any], list[Any]]:
        """``closed`` as a function of the flattened arguments, and those arguments (what ``jax.vjp``
        differentiates in all inputs)."""
        g = self.function(closed)
        leaves, tree = jax.tree_util.tree_flatten((self.args, self.kwargs))

        def flat(*xs: Any) -> Any:
            a, k = jax.tree_util.tree_unflatten(tree, xs)
            return g(*a, **k)

        return flat, leaves

    def variant(self, edits: dict[int, Edit]) -> core.ClosedJaxpr:
        """The program with the equations whose ``id`` is in ``edits`` rewritten."""
        return rewrite(self.closed, lambda eqn: edits.get(id(eqn))) if edits else self.closed

    def costs(self, edits: dict[int, Edit], mode: str = "value_and_grad") -> Costs:
        """Compiled temp bytes and FLOPs of the differentiated variant. Variants that are the same
        program share one compile: first by their edits (a site table's row for the policy as written
        is the code as written, its ``none`` row a checkpoint-removing fix), then by the text of the
        lowered program (a rewrite that lowers to what another did)."""
        key = (self._key(edits), mode)
        if key not in self._cache:
            g = self.function(self.variant(self.effective(edits)))
            transform = jax.value_and_grad if mode == "value_and_grad" else jax.grad
            lowered = jax.jit(transform(g, argnums=self.argnums, has_aux=self.has_aux)).lower(*self.args, **self.kwargs)
            text = hashlib.sha256(lowered.as_text().encode()).digest()  # no locations: equal programs, equal text
            if text not in self._by_text:
                compiled = lowered.compile(compiler_options=fast_compile_options())
                self.compiles += 1
                analysis = compiled.cost_analysis()  # a dict in jax 0.10.2, a list of dicts in older versions
                analysis = (
                    (analysis[0] if analysis else {}) if isinstance(analysis, (list, tuple)) else (analysis or {})
                )
                memory = compiled.memory_analysis()
                if memory is None:  # a backend without it: no costs to compare (the caller's compile failure)
                    raise RuntimeError("XLA gave no memory analysis for the compiled program")
                self._by_text[text] = Costs(int(memory.temp_size_in_bytes), float(analysis.get("flops", math.nan)))
            self._cache[key] = self._by_text[text]
        return self._cache[key]

    def compiled(self, edits: dict[int, Edit], mode: str = "value_and_grad") -> Costs | None:
        """``costs`` when that variant was already compiled (for a verdict, a table or a plan), else None."""
        return self._cache.get((self._key(edits), mode))

    def residual_bytes(self, edits: dict[int, Edit]) -> int:
        """Bytes of the residuals ``jax.vjp`` of the variant saves for the backward pass, its
        arguments excluded (they are in memory anyway), differentiated in all inputs as the site
        tables' residual lists are: exact, from the jaxpr, no compile. XLA may still drop a residual
        the backward pass never reads, so this is what JAX saves, not the compiled temp."""
        key = self._key(edits)
        if key not in self._residuals:
            flat, leaves = self.flat(self.variant(self.effective(edits)))
            jaxpr = jax.make_jaxpr(lambda *xs: jax.vjp(flat, *xs)[1])(*leaves).jaxpr
            arguments = set(jaxpr.invars)
            self._residuals[key] = sum(
                aval_bytes(v.aval) for v in jaxpr.outvars if not (isinstance(v, core.Var) and v in arguments)
            )
        return self._residuals[key]

    def _key(self, edits: dict[int, Edit]) -> tuple[Any, ...]:
        return tuple(sorted((k, self._edit_key(k, e)) for k, e in self.effective(edits).items()))

    def effective(self, edits: dict[int, Edit]) -> dict[int, Edit]:
        """``edits`` without those that set a checkpoint's params to what it has (a policy that
        decides alike on every equation of its body counts as the same)."""
        eqns = self._checkpoint_eqns()
        return {
            k: e
            for k, e in edits.items()
            if k not in eqns
            or e.inline
            or e.scope is not None
            or not all(
                self._param_key(eqns[k], name, eqns[k].params.get(name)) == self._param_key(eqns[k], name, value)
                for name, value in e.params.items()
            )
        }

    def _checkpoint_eqns(self) -> dict[int, core.JaxprEqn]:
        return {id(e): e for site in self.sites for e in site.eqns}

    def _edit_key(self, k: int, edit: Edit) -> tuple[Any, ...]:
        if edit.inline:
            return ("inline",)
        eqn = self._checkpoint_eqns().get(k)
        return (edit.scope, *sorted((name, self._param_key(eqn, name, v)) for name, v in edit.params.items()))

    def _param_key(self, eqn: core.JaxprEqn | None, name: str, value: Any) -> Any:
        """What decides the program: a policy is read only through its answer for each equation of
        the checkpoint's body (``partial_eval_jaxpr_custom``, nested bodies included; ``None`` is
        ``nothing_saveable``), so two policies that answer alike give one program (``dots_saveable``
        and ``dots_with_no_batch_dims_saveable`` on a body without batched dots)."""
        if name == "policy" and eqn is not None:
            decisions = _decisions(eqn.params["jaxpr"], value or jax.checkpoint_policies.nothing_saveable)
            if decisions is not None:
                return ("decides", decisions)
        return value if isinstance(value, (bool, tuple, type(None))) else ("id", id(value))


def _decisions(body: core.Jaxpr, policy: Callable[..., Any]) -> tuple[str, ...] | None:
    """The policy's answer for every equation of ``body``, as partial evaluation asks it (the
    primitive, its inputs' avals and its params); None when the policy raises."""
    try:
        return tuple(
            repr(pe.ensure_enum(policy(e.primitive, *[v.aval for v in e.invars], **e.params))) for e, _ in walk(body)
        )
    except Exception:
        return None


_PROGRAMS: list[tuple[tuple[Any, ...], Program]] = []  # the last traced programs, by identity of their inputs


def traced(
    fun: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], argnums: int | Sequence[int] = 0
) -> Program:
    """``Program.trace``, shared by the checks and the site table of one target (one trace, and one
    compile per distinct variant)."""
    key = (fun, args, kwargs, argnums if isinstance(argnums, int) else tuple(argnums))
    for known, program in _PROGRAMS:
        if (
            known[0] is fun
            and known[1] is args
            and (known[2] is kwargs or not (known[2] or kwargs))
            and known[3] == key[3]
        ):
            return program
    program = Program.trace(fun, args, kwargs, argnums)
    _PROGRAMS[:] = [*_PROGRAMS[-3:], (key, program)]
    return program


def aval_bytes(aval: Any) -> int:
    """Bytes of an abstract value; a numpy dtype or an extended one (a PRNG key: ``key<fry>``, 8 bytes)."""
    return int(aval.size * aval.dtype.itemsize)


def _has_aux(out_shape: Any) -> bool:
    if _is_scalar(out_shape):
        return False
    if isinstance(out_shape, (tuple, list)) and len(out_shape) == 2 and _is_scalar(out_shape[0]):
        return True
    shapes = jax.tree_util.tree_map(lambda s: format_shape(s.dtype.name, s.shape), out_shape)
    raise NotDifferentiable(f"the target returns {shapes}, not a scalar loss")


def _is_scalar(x: Any) -> bool:
    return hasattr(x, "shape") and tuple(x.shape) == () and jax.numpy.issubdtype(x.dtype, jax.numpy.inexact)


def edits_for(sites: Sequence[Site], edit: Edit) -> dict[int, Edit]:
    return {id(eqn): edit for site in sites for eqn in site.eqns}


# --- memory_evidence ------------------------------------------------------------------------------


def _infer_claim(site: Site) -> str:
    if not site.prevent_cse:
        return "cse-lost"
    policy = site.params["policy"]
    if policy is jax.checkpoint_policies.everything_saveable or (callable(policy) and _saves_everything(policy)):
        return "saves-nothing"
    return "recompute-for-nothing"


def _saves_everything(policy: Callable[..., Any]) -> bool:
    """``save_anything_except_these_names`` and ``lambda *_, **__: True`` return True for anything."""
    try:
        return (
            policy(jax.lax.sin_p) is True
            and policy(jax.lax.dot_general_p, dimension_numbers=(((1,), (0,)), ((), ()))) is True
        )
    except Exception:
        return False


FIXES: dict[str, tuple[Edit, str]] = {
    "recompute-for-nothing": (Edit(inline=True), "checkpoint removed (its body inlined)"),
    "cse-lost": (Edit(params={"prevent_cse": True}), "prevent_cse=True"),
    "saves-nothing": (Edit(inline=True), "checkpoint removed (its body inlined)"),
}


def memory_evidence(
    code: str,
    fun: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    site_line: int,
    argnums: int | Sequence[int] = 0,
    claim: str | None = None,
    span: tuple[int, int, int, int] | None = None,
) -> Verdict:
    """Compile the differentiated target as written and with the finding's fix; see the module doc.

    ``claim`` (see the module doc) picks the fix; without it, it is read off the site (``prevent_cse=False``:
    cse-lost; a policy that saves everything: saves-nothing; else recompute-for-nothing). ``span`` (line, column, end
    line, end column) is the flagged expression: when it is a call of the checkpointed function, the
    fix changes that call only."""
    try:
        program, sites, wrapped = _locate(code, fun, args, kwargs, site_line, argnums)
        if span is not None:
            sites = calls_at(sites, code, span)
    except NotDifferentiable as exc:
        return _unconfirmed(str(exc))
    except Exception as exc:  # user code: any failure to trace is a finding we cannot check
        return _unconfirmed(f"tracing the target failed: {type(exc).__name__}: {exc}")
    if not sites:
        return _unconfirmed(f"no checkpoint from line {site_line} is reached when the target is traced")
    if any(s.opaque for s in sites):
        return _unconfirmed(
            f"the checkpoint at line {site_line} is inside a custom_vjp/custom_jvp rule, which cannot be rewritten"
        )
    claim = claim or _infer_claim(sites[0])
    if claim not in FIXES:
        return _unconfirmed(f"no compiled-cost check for {claim}")
    edit, fix = FIXES[claim]
    if claim == "cse-lost" and all(s.prevent_cse for s in sites):
        return Verdict("refuted", f"the checkpoint at line {site_line} already has prevent_cse=True", {"fix": fix})
    evidence: dict[str, Any] = {
        "fix": fix,
        "calls": sum(len(s.eqns) for s in sites),
        "backend": jax.default_backend(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
    }
    if wrapped:
        evidence["as_written_note"] = f"the target was wrapped in jax.checkpoint as line {site_line} does"
    edits = edits_for(sites, edit)
    try:
        # grad numbers only for a checkpoint called once (a whole-loss or last-stage one, which
        # compiles under grad to the program without it): no verdict reads them, and per call
        # site they are two more compiles of the whole program
        modes = MODES if claim == "recompute-for-nothing" and evidence["calls"] == 1 else MODES[:1]
        pairs = {mode: (program.costs({}, mode), program.costs(edits, mode)) for mode in modes}
    except Unsupported as exc:
        return _unconfirmed(f"cannot rewrite the checkpoint at line {site_line}: {exc}")
    except Exception as exc:
        return _unconfirmed(f"compiling the target failed: {type(exc).__name__}: {exc}")
    for mode, (orig, fixed) in pairs.items():
        pair = {"as_written": orig.to_json(), "with_fix": fixed.to_json()}
        if mode == "value_and_grad":
            evidence.update(pair)
        else:
            evidence["grad"] = pair
    status, why = _verdict(claim, *pairs["value_and_grad"])
    loops = (
        " FLOPs count a loop body once (XLA cost_analysis)."
        if any(p in ("scan", "while") for s in sites for p in s.path)
        else ""
    )
    reason = f"{why} " + "; ".join(f"{mode}: {_compare(*pair)}" for mode, pair in pairs.items())
    reason += f".{loops}"
    return Verdict(status, reason, evidence)


def _locate(
    code: str, fun: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], line: int, argnums: Any
) -> tuple[Program, list[Site], bool]:
    program = traced(fun, args, kwargs, argnums)
    sites = sites_at(program.sites, code, line)
    if sites:
        return program, sites, False
    # grad(jax.checkpoint(loss)) with ``loss`` as the target: the checkpoint is applied outside it.
    if getattr(fun, "__name__", None) in target_at(code, line).names and _is_plain_wrap(code, line):
        program = Program.trace(jax.checkpoint(fun), args, kwargs, argnums)
        return program, [s for s in program.sites if not s.path], True
    return program, [], False


def _is_plain_wrap(code: str, line: int) -> bool:
    """The call at ``line`` is ``jax.checkpoint(f)``/``jax.remat(f)`` without keywords."""
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Call) and node.lineno == line and len(node.args) == 1 and not node.keywords:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("checkpoint", "remat"):
                return True
    return False


def _less(a: float, b: float) -> bool:
    """``a`` is meaningfully smaller than ``b``."""
    return a < b * (1 - TOLERANCE)


def _verdict(claim: str, orig: Costs, fixed: Costs) -> tuple[Status, str]:
    saves_memory = _less(orig.temp_bytes, fixed.temp_bytes)
    if claim == "cse-lost":
        if _less(fixed.temp_bytes, orig.temp_bytes):
            return (
                "confirmed",
                "With prevent_cse=False the checkpoint's memory saving is lost: prevent_cse=True restores it.",
            )
        return "refuted", "prevent_cse=True saves no memory here."
    if claim == "saves-nothing":
        if not saves_memory and not _less(orig.flops, fixed.flops):
            return "confirmed", "The checkpoint saves no memory and removing it costs no FLOPs."
        return "refuted", "The checkpoint saves memory or FLOPs here."
    if saves_memory:
        return "refuted", "The checkpoint saves memory."
    if _less(fixed.flops, orig.flops):
        return "confirmed", "The checkpoint saves no memory and removing it saves FLOPs."
    return "refuted", "Removing the checkpoint saves no FLOPs."


def _compare(orig: Costs, fixed: Costs) -> str:
    """As written against the fix, with the difference the original makes."""
    return (
        f"temp {byte_size(orig.temp_bytes, 2)} as written vs {byte_size(fixed.temp_bytes, 2)} with the fix "
        f"({_pct(orig.temp_bytes, fixed.temp_bytes)}), "
        f"{flop_count(orig.flops)} vs {flop_count(fixed.flops)} ({_pct(orig.flops, fixed.flops)})"
    )


def _pct(orig: float, fixed: float) -> str:
    return f"{(orig - fixed) / fixed * 100:+.1f}%" if fixed else "n/a"


def _unconfirmed(reason: str) -> Verdict:
    return Verdict("unconfirmed", reason)
