"""Per checkpoint site: the residuals it saves for the backward pass, and a policy comparison.

Residuals are listed as ``print_saved_residuals`` lists them (same JAX walk over the forward part of
``jax.vjp``), each attributed to the checkpoint site whose body computed it: the program is re-traced
with every site's equations under a named scope (``remat_lint_site<i>``), which partial evaluation
carries onto the equations that compute the saved values. Values computed outside any checkpoint
(arguments, constants, un-checkpointed layers) go to one extra entry with ``"outside": True``.

The policy comparison has a row per policy with only that site's checkpoints changed (``none``
removes the checkpoint; a ``prevent_cse=False`` site also gets a ``prevent_cse=True`` row). Every row
has the bytes of the residuals ``jax.vjp`` saves (arguments excluded; exact, from the jaxpr, no
compile). Compiling a row (``value_and_grad``) costs about as much as compiling the training step. A
program of up to ``SMALL_PROGRAM`` equations compiles every row. A larger one compiles the code as
written (the verdicts' program) and then, visiting the rows from the fewest residual bytes, each row
whose residual bytes are within ``MEMORY_SLACK`` of the lowest temp compiled so far; a row already
compiled (a verdict's fix) shows its numbers too. The others say they were not compiled (no estimate
stands in for a compiled number). Residual bytes do not bound temp (see ``SMALL_PROGRAM``: the
backward pass reads every residual there, yet temp is lower), so a row left out could have compiled
within the slack: the text says which rows were left out. The recommendation is the compiled
policy with the fewest FLOPs among those whose temp memory is within ``MEMORY_SLACK`` of the lowest.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import jax
from jax._src import api_util, core, source_info_util
from jax._src.lax import lax as lax_internal

from remat_lint.trace.worker.costs import Program, aval_bytes, edits_for, traced
from remat_lint.trace.worker.jaxpr_rewrite import Edit, Unsupported, walk
from remat_lint.trace.worker.jaxpr_sites import (
    POLICIES,
    Site,
    attribute,
    best_lines,
    display_path,
    target_at,
)

MEMORY_SLACK = 0.10
# equations, nested ones counted per call (bench/trace_1b.py: 211 at 2 layers, 2015 at 24): a program this small
# compiles every row, as its compiles are cheap and residual bytes say little about its temp (a 3-layer MLP's `none`
# row saves 224 KiB of residuals and compiles to the lowest temp, 64 KiB)
SMALL_PROGRAM = 1000
LOOP_FLOPS = "the site runs in a scan/while loop: XLA's cost analysis counts the loop body once, not per iteration"
_TAG = "remat_lint_site"
_TAG_RE = re.compile(_TAG + r"(\d+)")
VARIANTS: dict[str, Edit] = {
    "none": Edit(inline=True),
    **{name: Edit(params={"policy": p}) for name, p in POLICIES.items()},
}


def site_report(
    fun: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    argnums: int | Sequence[int] = 0,
    *,
    code: str | None = None,
    site_lines: Sequence[int] = (),
) -> list[dict[str, Any]]:
    """One dict per checkpoint site the target reaches (see the module doc).

    ``line`` is, given ``code`` and the static sites' ``site_lines``, the static site the checkpoint
    matches; otherwise the checkpointed function's first line (decorator, ``def`` or ``lambda``), or
    for framework wrappers (``nn.remat(Block)``) a line of the body."""
    program = traced(fun, args, kwargs, argnums)
    sites = attribute(program.sites, code) if code else program.sites
    by_site: dict[int | None, list[dict[str, Any]]] = {}
    for entry, index in attributed_residuals(fun, program, sites):
        by_site.setdefault(index, []).append(entry)
    targets = [target_at(code, line) for line in site_lines] if code else []
    report = []
    for i, site in enumerate(sites):
        file, line = display_path(site.location)
        best = best_lines(site, code or "", targets)
        if len(best) == 1:  # two wraps of one function that the calls do not tell apart: neither
            line = best[0]
        policies = _policies(program, site)
        report.append(
            {
                "line": line,
                "file": file,
                "function": site.function,
                "calls": len(site.eqns),
                "policy": site.policy,
                "prevent_cse": site.prevent_cse,
                "residuals": by_site.get(i, []),
                "policies": policies,
                "recommendation": _recommend(site, policies),
                "compile_note": _not_compiled(policies),
                "flops_note": LOOP_FLOPS if any(p in ("scan", "while") for p in site.path) else "",
            }
        )
    if by_site.get(None):
        report.append(
            {
                "line": None,
                "file": None,
                "function": "outside checkpoints",
                "outside": True,
                "residuals": by_site[None],
                "policies": [],
                "recommendation": "",
            }
        )
    return report


def with_shapes(report: dict[str, Any], source: str) -> dict[str, Any]:
    """The report says where its shapes came from (``source``: ``Prepared.source``); from guessed
    shapes (a shape search, jaxtyping annotations) it measures nothing a project runs, so it
    recommends nothing."""
    from remat_lint.trace.worker.build import SHAPE_ORIGINS

    origin = SHAPE_ORIGINS.get(source, "guessed")
    if origin != "guessed":
        return {**report, "shapes": origin}
    return {
        **report,
        "shapes": "guessed",
        "recommendation": f"none: the shapes were guessed ({source}); declare the "
        "inputs in [[tool.remat-lint.trace.targets]] or record them with --trace-run to get one",
    }


def _policies(program: Program, site: Site) -> list[dict[str, Any]]:
    """Every row's residual bytes; compiled temp and FLOPs for the rows the recommendation compares
    (see the module doc) and for those already compiled (a verdict's fix)."""
    if site.opaque:
        return []
    variants = VARIANTS if site.prevent_cse else {**VARIANTS, "prevent_cse=True": Edit(params={"prevent_cse": True})}
    try:
        edits = {name: edits_for([site], edit) for name, edit in variants.items()}
        rows: dict[str, dict[str, Any]] = {
            name: {"policy": name, "residual_bytes": program.residual_bytes(e)} for name, e in edits.items()
        }
        lowest = program.costs({}).temp_bytes  # as written: what the verdicts compile
        small = sum(1 for _ in walk(program.closed.jaxpr)) <= SMALL_PROGRAM
        for name in sorted(rows, key=lambda n: rows[n]["residual_bytes"]):
            costs = program.compiled(edits[name])
            if costs is None and (small or rows[name]["residual_bytes"] <= lowest * (1 + MEMORY_SLACK)):
                costs = program.costs(edits[name])
            rows[name].update({**(costs.to_json() if costs else {}), "compiled": costs is not None})
            lowest = min(lowest, costs.temp_bytes) if costs else lowest
    except Unsupported:
        return []
    return list(rows.values())


def _recommend(site: Site, rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no comparison: the checkpoint is inside a custom_vjp/custom_jvp rule"
    compiled = [r for r in rows if r["compiled"]]
    lowest = min(r["temp_bytes"] for r in compiled)
    within = [r for r in compiled if r["temp_bytes"] <= lowest * (1 + MEMORY_SLACK)]
    best = min(within, key=lambda r: (r["flops"], r["temp_bytes"]))
    among = "the compiled variants" if len(compiled) < len(rows) else "the variants"
    rule = f"the fewest FLOPs among {among} within {MEMORY_SLACK:.0%} of the lowest temp memory ({lowest} bytes)"
    cse = "" if site.prevent_cse else " (the policies measured with this site's prevent_cse=False, as written)"
    if best["policy"] == "none":
        # within the slack, removing it may still cost memory: say how much rather than "none"
        saved = 1 - lowest / best["temp_bytes"] if best["temp_bytes"] else 0.0
        gain = "saves no memory here" if saved <= 0 else f"saves at most {saved:.0%} of temp memory here"
        return f"remove the checkpoint: {rule}{cse}; the checkpoint {gain}"
    choice = best["policy"] if best["policy"] == "prevent_cse=True" else f"policy={best['policy']}"
    return f"{choice}: {rule}{cse}"


def _not_compiled(rows: list[dict[str, Any]]) -> str:
    skipped = [r["policy"] for r in rows if not r["compiled"]]
    return (
        f"{', '.join(skipped)}: not compiled (no temp or FLOPs measured): the residuals JAX saves for "
        f"{'it' if len(skipped) == 1 else 'each'} exceed the lowest compiled temp by more than {MEMORY_SLACK:.0%}"
        if skipped
        else ""
    )


# --- residuals ------------------------------------------------------------------------------------


def attributed_residuals(
    fun: Callable[..., Any], program: Program, sites: Sequence[Site]
) -> list[tuple[dict[str, Any], int | None]]:
    """``print_saved_residuals``'s entries for the target, each with the index of the site that
    computed it (None: outside checkpoints)."""
    tagged = {id(eqn): Edit(scope=f"{_TAG}{i}") for i, site in enumerate(sites) if not site.opaque for eqn in site.eqns}
    flat, leaves = program.flat(program.variant(tagged))
    closed, out_shape = jax.make_jaxpr(lambda *xs: jax.vjp(flat, *xs), return_shape=True)(*leaves)
    jaxpr = closed.jaxpr
    n_res = len(jax.tree_util.tree_leaves(out_shape[1]))
    outvars = jaxpr.outvars[len(jaxpr.outvars) - n_res :]
    names = _arg_names(fun, program, len(leaves))
    through = {e.outvars[0]: e for e in jaxpr.eqns if e.primitive is lax_internal.reduce_precision_p}
    wanted = {through[v].invars[0] if v in through else v: v for v in outvars if isinstance(v, core.Var)}
    producers = _producers(jaxpr)
    out: list[tuple[dict[str, Any], int | None]] = []
    out += [(_entry(v.aval, "from a literal"), None) for v in outvars if isinstance(v, core.Literal)]
    out += [(_entry(v.aval, "from a constant"), None) for v in jaxpr.constvars if v in wanted]
    out += [(_entry(v.aval, f"from the argument {names[i]}"), None) for i, v in enumerate(jaxpr.invars) if v in wanted]
    for eqn in jaxpr.eqns:
        for v in eqn.outvars:
            if v in wanted:
                site = _site_of(v, producers) if wanted[v] is v else _tag(through[wanted[v]]) or _site_of(v, producers)
                out.append((_entry(v.aval, _describe(eqn)), site))
    return out


def _arg_names(fun: Callable[..., Any], program: Program, n: int) -> list[str]:
    """Argument names as ``print_saved_residuals`` spells them (``params['w'][0]``)."""
    try:
        names = api_util.debug_info("saved_residuals", fun, program.args, program.kwargs).arg_names
    except Exception:  # a private helper: fall back to pytree paths
        names = None
    if not names or len(names) != n:
        paths = jax.tree_util.tree_flatten_with_path((program.args, program.kwargs))[0]
        names = tuple(jax.tree_util.keystr(p) for p, _ in paths)
    return [name or f"at flattened index {i}" for i, name in enumerate(names)]


def _entry(aval: Any, source: str) -> dict[str, Any]:
    return {
        "shape": aval.str_short(short_dtypes=True),
        "dtype": aval.dtype.name,
        "bytes": aval_bytes(aval),
        "source": source,
    }


def _describe(eqn: core.JaxprEqn) -> str:
    """As ``jax._src.ad_checkpoint._saved_residuals`` words it."""
    src = source_info_util.summarize(eqn.source_info)
    if eqn.primitive.name == "name":
        return f"named '{eqn.params['name']}' from {src}"
    if eqn.primitive.name in ("jit", "pjit"):
        return f"output of jitted function '{eqn.params['name']}' from {src}"
    return f"output of {eqn.primitive.name} from {src}"


def _producers(jaxpr: core.Jaxpr) -> dict[core.Var, tuple[core.JaxprEqn, int]]:
    return {v: (e, k) for e in jaxpr.eqns for k, v in enumerate(e.outvars)}


def _tag(eqn: core.JaxprEqn) -> int | None:
    found = _TAG_RE.findall(str(eqn.source_info.name_stack))
    return int(found[-1]) if found else None


def _site_of(v: core.Var, producers: dict[core.Var, tuple[core.JaxprEqn, int]], depth: int = 0) -> int | None:
    """The site whose scope computed ``v``, looking into a loop or jit that returns it (a residual
    of a scanned checkpoint is an output of ``scan``, computed in its body)."""
    eqn, k = producers[v]
    if (tag := _tag(eqn)) is not None or depth > 8:
        return tag
    subs = [j for j in core.jaxprs_in_params(eqn.params) if len(j.outvars) == len(eqn.outvars)]
    if len(subs) != 1 or not isinstance(inner := subs[0].outvars[k], core.Var):
        return None
    inner_producers = _producers(subs[0])
    if inner not in inner_producers:
        return None
    rp = inner_producers[inner][0]
    if rp.primitive is lax_internal.reduce_precision_p and (tag := _tag(rp)) is not None:
        return tag
    if rp.primitive is lax_internal.reduce_precision_p and rp.invars[0] in inner_producers:
        inner = rp.invars[0]
    return _site_of(inner, inner_producers, depth + 1)
