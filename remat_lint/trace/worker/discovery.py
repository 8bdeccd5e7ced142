"""Discovery over the programs a ``--trace-run`` differentiated (worker side, JAX imported).

The static pass reads spellings; a recorded program holds every checkpoint JAX actually applied, as
a ``checkpoint`` equation with its policy and the source lines that made it (jaxpr_sites.py). For
each site of this module in one recorded program this module measures, as the cost checks do
(costs.py: compiled ``value_and_grad``, on CPU with ``driver.CPU_XLA_FLAGS``, which keep optimisation
barriers as GPU/TPU do), the program as written and without that checkpoint, and reports

- ``REM401``: the checkpoint saves no peak temp memory yet costs FLOPs or temp memory (more than
  ``costs.TOLERANCE``), in the program as recorded (of at least ``MIN_TEMP_BYTES`` temp without it)
  and again at ``scaling.FACTOR`` times its batch, where activations rather than fixed-size buffers
  decide the peak. A checkpoint that lowers temp memory at either size is never reported.
- ``REM403``: a name policy (``save_only_these_names``…) with names that match no ``checkpoint_name``
  in the program.

It also says which static site lines the program applied: the driver reports the sites no program
of the run applied (REM402, dynamic_findings.py). Each record says where it was observed: the program and its
shapes, and the test that differentiated it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import jax

from remat_lint.trace.protocol import NO_SAVING, UNKNOWN_NAMES, Item
from remat_lint.trace.shapes import format_shape
from remat_lint.trace.worker import costs, scaling
from remat_lint.trace.worker.budget import declared_names
from remat_lint.trace.worker.evidence import policy_names
from remat_lint.trace.worker.jaxpr_rewrite import Edit, walk
from remat_lint.trace.worker.jaxpr_sites import (
    Site,
    _in_file,
    attribute,
    best_lines,
    calls_at,
    sites_at,
    target_at,
)
from remat_lint.trace.worker.wrap_bindings import called_spans

# REM401 judges a program only from this much peak temp without the checkpoint: below it, a test's
# configuration of a model (two tiny layers, dropout off) is too small to stand for the model it tests;
# a per-layer ``nn.remat(Block)`` of Dense(8) + tanh at f32[4,8] measured 352 vs 256 bytes there
MIN_TEMP_BYTES = 1024
# At 16 times the batch (an extrapolation, not the observed program) a checkpoint counts as saving
# memory only from this fraction of peak temp: a whole linen GPT under ``nn.remat`` lowered it 1.3 %
# there (one activation) for +31.6 % FLOPs; a per-layer checkpoint lowered it 20-44 %
SCALED_SAVING = 0.05
Scaled = Callable[[], "costs.Program | None"]  # the recorded program at a larger batch (scaling.py), or None


@dataclass
class Discovered:
    """A finding tracing made, as the worker sends it (JSON) to the driver."""

    code: str
    line: int
    message: str
    program: str  # the differentiated program and its shapes: ``loss({w: f32[8,16]}, f32[4,8])``
    observed: str  # the test (pytest's id) or "" when the run was no pytest run
    evidence: dict[str, Any] = field(default_factory=dict)  # plain data and costs.Costs (``to_json`` writes dicts)
    # the ids of the request's static findings about the same checkpoint equations (REM102 at a call of
    # the wrap this record is at): the driver reports one finding for both
    names: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Observation:
    """What one recorded program shows about this module: the static sites it applied and the findings."""

    applied: list[int]
    found: list[Discovered]
    # a checkpoint that ran code of this file matched no static site (``jax.checkpoint(other.f)`` called
    # here): which site it is is unknown, so no site of the file may be called "not applied"
    unattributed: bool = False


def observe(
    program: costs.Program,
    code: str,
    site_lines: Sequence[int],
    name: str,
    observed: str,
    scaled: Scaled,
    measure: bool = True,
    items: Sequence[Item] = (),
) -> Observation:
    """The module's checkpoint sites in ``program`` (the recorded, differentiated one), judged; compiled
    costs (REM401) only when ``measure`` (on XLA:CPU, with ``driver.CPU_XLA_FLAGS``), and confirmed
    on ``scaled()`` (built once, when a site first needs it)."""
    scaled = functools.cache(scaled)
    targets = [target_at(code, line) for line in site_lines]
    applied: set[int] = set()
    found: list[Discovered] = []
    unattributed = False
    sites = attribute(program.sites, code)
    for site in sites:
        lines = _lines_of(site, code, targets)
        reached = {*lines, *_through_helper(site, code, site_lines)}
        applied.update(reached)
        unattributed |= not reached & set(site_lines) and any(_in_file(loc, code) for loc in _anchors(site))
        if len(lines) == 1:  # none: a checkpoint of another file (its module's session judges it); more: ambiguous
            judged = _judge(program, (sites, code), site, lines[0], name, observed, measure, scaled)
            named = _naming(program, site, code, items) if judged else []
            found += [replace(record, names=named) for record in judged]
    return Observation(sorted(applied & set(site_lines)), found, unattributed)


def _naming(program: costs.Program, site: Site, code: str, items: Sequence[Item]) -> list[int]:
    """The ids of the ``items`` whose checkpoint (at their line, narrowed to the call they flag, as
    their cost checks find it: costs.memory_evidence) shares an equation with ``site``."""
    eqns = {id(eqn) for eqn in site.eqns}

    def names(item: Item) -> bool:
        flagged = calls_at(sites_at(program.sites, code, item.line), code, item.position)
        return any(id(eqn) in eqns for s in flagged for eqn in s.eqns)

    return [item.id for item in items if names(item)]


def _anchors(site: Site) -> list[Any]:
    """The source locations that tie ``site`` to a file: its function, its body, its calls."""
    return [loc for loc in (site.definition, site.body, *site.calls) if loc is not None]


def _lines_of(site: Site, code: str, targets: Sequence[Any]) -> list[int]:
    """The static site lines ``site`` matches best (two sites that wrap one function tie when their
    calls do not say which), else the line of the checkpoint in this file, else none."""
    best = best_lines(site, code, targets)
    if best:
        return best
    if site.wrap is not None:  # ``lean = checkpointed(dense, P)``, the site in the helper: the line that chose P
        return [site.wrap]
    location = site.location
    return [location[1]] if location is not None and _in_file(location, code) else []


def _through_helper(site: Site, code: str, site_lines: Sequence[int]) -> list[int]:
    """The static sites inside the helper that ``site``'s wrap calls (``checkpointed(dense, P)``)."""
    if site.wrap is None:
        return []
    spans = called_spans(code, site.wrap)
    return [line for line in site_lines if any(a <= line <= b for a, b in spans)]


def _judge(
    program: costs.Program,
    attributed: tuple[list[Site], str],
    site: Site,
    line: int,
    name: str,
    observed: str,
    measure: bool,
    scaled: Scaled,
) -> list[Discovered]:
    """``site``'s findings; ``attributed``: the program's sites as ``attribute`` cut them, and the source."""
    found = []
    missing = _unknown_names(site, program)
    if missing:
        have = declared_names(site)
        found.append(
            Discovered(
                UNKNOWN_NAMES,
                line,
                f"The policy names {', '.join(repr(n) for n in missing)}, but no `checkpoint_name` in the differentiated program "
                f"has {'that name' if len(missing) == 1 else 'those names'} (names in the checkpointed body: "
                f"{', '.join(have) or 'none'}): "
                "the policy decides nothing by it",
                name,
                observed,
                {"policy_names": sorted(policy_names(site.params["policy"])), "body_names": have},
            )
        )
    if site.opaque or not measure:
        return found
    try:
        as_written = program.costs({})
        without = program.costs(costs.edits_for([site], Edit(inline=True)))
    except Exception:  # a program that cannot be rewritten (Unsupported) or compiled says nothing
        return found
    if without.temp_bytes < MIN_TEMP_BYTES or not _no_saving(as_written, without):
        return found
    at_scale = _at_scale(attributed, site, scaled())
    if at_scale is None:  # no saving at the test's shapes only: fixed-size buffers may hide the saving
        return found
    found.append(
        Discovered(
            NO_SAVING,
            line,
            "This checkpoint saves no memory in the differentiated program but costs compute: "
            f"{_compared(as_written, without)}; at {scaling.FACTOR} times the batch "
            f"({', '.join(at_scale['shapes'])}): {_compared(at_scale['as_written'], at_scale['without'])}",
            name,
            observed,
            {
                "as_written": as_written,
                "without": without,
                "scaled": at_scale,
                "calls": len(site.eqns),
                "policy": site.policy,
                "backend": jax.default_backend(),
                "xla_flags": os.environ.get("XLA_FLAGS", ""),
            },
        )
    )
    return found


def _compared(as_written: costs.Costs, without: costs.Costs) -> str:
    return costs._compare(as_written, without).replace("with the fix", "without it")


def _at_scale(attributed: tuple[list[Site], str], site: Site, scaled: costs.Program | None) -> dict[str, Any] | None:
    """The costs of ``site`` in ``scaled`` as written and without it, when it saves no memory there too;
    None when it does, or when the scaled program cannot be built, matched, rewritten or compiled."""
    if scaled is None:
        return None
    sites, code = attributed
    twin = scaling.same_site(attribute(scaled.sites, code), sites, site)
    if twin is None:
        return None
    try:
        as_written = scaled.costs({})
        without = scaled.costs(costs.edits_for([twin], Edit(inline=True)))
    except Exception:
        return None
    if not _no_saving(as_written, without, slack=SCALED_SAVING):
        return None
    leaves = jax.tree_util.tree_leaves(scaled.kwargs)
    shapes = [format_shape(x.dtype.name, x.shape) for x in leaves if isinstance(x, jax.ShapeDtypeStruct)]
    return {"factor": scaling.FACTOR, "shapes": shapes, "as_written": as_written, "without": without}


def _no_saving(as_written: costs.Costs, without: costs.Costs, slack: float = 0.0) -> bool:
    """Peak temp not lower than without the checkpoint by a single byte (by ``slack`` of it at the larger
    batch), and FLOPs or temp higher by more than ``costs.TOLERANCE``."""
    if as_written.temp_bytes < without.temp_bytes * (1 - slack):
        return False
    return costs._less(without.flops, as_written.flops) or costs._less(without.temp_bytes, as_written.temp_bytes)


def _unknown_names(site: Site, program: costs.Program) -> list[str]:
    """The names of a name policy that no ``checkpoint_name`` of the program carries (a policy shared by
    two checkpoints may name what only the other's body declares: not reported)."""
    policy = site.params["policy"]
    names = policy_names(policy) if policy is not None else set()
    have = {str(eqn.params["name"]) for eqn, _ in walk(program.closed.jaxpr) if eqn.primitive.name == "name"}
    return sorted(n for n in names if n not in have)
