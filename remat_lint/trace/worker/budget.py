"""--memory-budget: the checkpoint policies of one differentiated program that fit a peak-temp budget.

Per checkpoint site the candidates are: no checkpoint, ``nothing_saveable``, ``dots_saveable``,
``dots_with_no_batch_dims_saveable``, ``save_only_these_names`` over the names the site's body declares
with ``checkpoint_name``, ``save_and_offload_only_these_names`` offloading those names where the
backend has host memory apart from the device's (not XLA:CPU: ``host_memory``), and ``prevent_cse=True``
at a ``prevent_cse=False`` site. Each candidate is compiled once with only its site changed
(``value_and_grad``, as the policy table does: the same cache entries). An assignment of one candidate
per site is then predicted by adding each site's change in compiled temp bytes and FLOPs to the
program as written. Sites that interact (a checkpoint nested in another's body) make that prediction
miss in either direction, so every assignment compiled (today's, each single change, no checkpoint at
all, each confirmation) is kept with its exact costs and its prediction error, and the search
compiles, in order of fewest predicted FLOPs, every assignment that could still beat the cheapest
compiled fit (predicted to fit, and cheaper, within the largest error measured so far) until none is
left (``proven``) or ``CONFIRMATIONS`` compiles were spent. The cheapest compiled fit is chosen; where
nothing fits, the smallest peak compiled is reported. The residual bytes of an assignment do not
bound its compiled temp from below (XLA drops or fuses residuals: a site table's ``none`` row saves
22 KiB of residuals and compiles to 9.2 KiB temp), so they prune nothing here.
Residual bytes saved per site are exact: the residuals of ``jax.vjp`` of the
program with that site changed, arguments excluded, from its jaxpr (no compile; ``Program.residual_bytes``,
shared with the site table).

``parse_budget`` and ``format_plans`` run in the main process: this module imports JAX only inside
the functions the worker calls.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from remat_lint.apis.jax import POLICY_NAMESPACE

if TYPE_CHECKING:
    from remat_lint.trace.worker.costs import Costs, Program
    from remat_lint.trace.worker.jaxpr_rewrite import Edit
    from remat_lint.trace.worker.jaxpr_sites import Site

EXHAUSTIVE_LIMIT = 20_000  # assignments enumerated; above this, a greedy search
CONFIRMATIONS = 24  # at most this many compiles confirm predicted assignments, per budget (see ``choose``)
PREDICTION_TOLERANCE = 0.01  # an assignment must be able to beat the cheapest compiled fit by more than this
AS_WRITTEN = "as written"
_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
_BUDGET = re.compile(r"^\s*(?P<number>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>[a-zA-Z]*|%)\s*$")


@dataclass(frozen=True)
class Budget:
    """Peak temp bytes, or a fraction of the program's peak temp with no checkpoint at all."""

    text: str
    bytes: int | None = None
    fraction: float | None = None

    def limit(self, no_checkpoint_temp: int) -> int:
        return self.bytes if self.bytes is not None else int(no_checkpoint_temp * (self.fraction or 0.0))


def parse_budget(text: str) -> Budget:
    """``12GiB``, ``500MB``, ``1048576`` (bytes) or ``0.5`` / ``50%`` (of the no-checkpoint peak)."""
    m = _BUDGET.match(text)
    if m is None or m["unit"].lower() not in {*_UNITS, "%"}:
        raise ValueError(f"--memory-budget {text!r}: expected bytes (12GiB, 500MB, 1048576) or a fraction (0.5, 50%)")
    number, unit = float(m["number"]), m["unit"].lower()
    if unit == "%" or (not unit and number <= 1):
        fraction = number / 100 if unit == "%" else number
        if not 0 < fraction <= 1:
            raise ValueError(f"--memory-budget {text!r}: a fraction must be in (0, 1]")
        return Budget(text, fraction=fraction)
    if not unit and not number.is_integer():
        raise ValueError(f"--memory-budget {text!r}: a byte count is a whole number; a fraction is at most 1")
    return Budget(text, bytes=int(number * _UNITS[unit]))


# --- candidates (worker side) -----------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    name: str  # as the table shows it, and the policy table's row name where there is one
    policy: str | None  # the source to write as policy= (None: remove the checkpoint or set prevent_cse)
    edit: Edit | None  # None: the site as written


def host_memory() -> str | None:
    """The memory kind to offload residuals to: ``pinned_host`` where the backend's device has it
    apart from its own memory. XLA:CPU lists ``pinned_host`` too, but its device memory is host
    memory: an offloaded residual compiles to the program that saves it (measured on jax 0.10.2:
    the temp bytes of ``save_only_these_names``, no host temp), so the saving cannot be measured."""
    import jax

    if jax.default_backend() == "cpu":
        return None
    return "pinned_host" if any(m.kind == "pinned_host" for m in jax.devices()[0].addressable_memories()) else None


def offload_note(backend: str) -> str:
    """Why ``save_and_offload_only_these_names`` was not a candidate (``host_memory()`` is None)."""
    if backend == "cpu":
        return (
            "save_and_offload_only_these_names was not considered: on XLA:CPU device memory is host memory and an "
            "offloaded residual compiles as saved (the temp bytes of save_only_these_names), so what offloading "
            "frees on a GPU/TPU cannot be measured here"
        )
    return f"save_and_offload_only_these_names was not considered: the {backend} device has no pinned_host memory"


def candidates(site: Site, offload_to: str | None = None) -> list[Candidate]:
    """What a site may become; the candidate equal to the site as written is ``edit=None``. With
    ``offload_to`` (``host_memory()``), a site declaring names may also offload them all there."""
    import jax

    from remat_lint.trace.worker.jaxpr_rewrite import Edit
    from remat_lint.trace.worker.jaxpr_sites import POLICIES

    cp = jax.checkpoint_policies
    today = site.params["policy"] or cp.nothing_saveable  # None is the default, nothing_saveable
    out = [Candidate(AS_WRITTEN, None, None), Candidate("none", None, Edit(inline=True))]
    for name in ("nothing_saveable", "dots_with_no_batch_dims_saveable", "dots_saveable"):
        if POLICIES[name] is not today:
            out.append(Candidate(name, f"{POLICY_NAMESPACE}.{name}", Edit(params={"policy": POLICIES[name]})))
    names = declared_names(site)
    if names and getattr(today, "saveable_names", None) != frozenset(names):
        args = ", ".join(repr(n) for n in names)
        out.append(
            Candidate(
                f"save_only_these_names({args})",
                f"{POLICY_NAMESPACE}.save_only_these_names({args})",
                Edit(params={"policy": cp.save_only_these_names(*names)}),
            )
        )
    if names and offload_to:
        listed = "[" + ", ".join(repr(n) for n in names) + "]"
        keywords = f"names_which_can_be_saved=[], names_which_can_be_offloaded={listed}, offload_src='device', offload_dst={offload_to!r}"
        policy = cp.save_and_offload_only_these_names(
            names_which_can_be_saved=[],
            names_which_can_be_offloaded=names,
            offload_src="device",
            offload_dst=offload_to,
        )
        out.append(
            Candidate(
                f"save_and_offload_only_these_names({', '.join(repr(n) for n in names)})",
                f"{POLICY_NAMESPACE}.save_and_offload_only_these_names({keywords})",
                Edit(params={"policy": policy}),
            )
        )
    if not site.prevent_cse:
        out.append(Candidate("prevent_cse=True", None, Edit(params={"prevent_cse": True})))
    return out


def declared_names(site: Site) -> list[str]:
    """The ``checkpoint_name`` names in the site's body, in order."""
    from remat_lint.trace.worker.jaxpr_rewrite import walk

    found: dict[str, None] = {}
    for eqn, _ in walk(site.params["jaxpr"]):
        if eqn.primitive.name == "name":
            found.setdefault(str(eqn.params["name"]))
    return list(found)


# --- the search (worker side) ---------------------------------------------------------------------


@dataclass
class _Option:
    site: int
    candidate: Candidate
    costs: Costs  # compiled, the program with only this site changed
    residual_bytes: int  # of the program with only this site changed


Assignment = tuple[_Option, ...]


class Search:
    """One program's per-site candidates, measured once; ``choose`` answers a budget from them."""

    def __init__(self, program: Program, lines: list[int | None]) -> None:
        self.program = program
        kept = [i for i, s in enumerate(program.sites) if not s.opaque]  # a custom_vjp rule's cannot be rewritten
        self.sites = [program.sites[i] for i in kept]
        self.lines = [lines[i] for i in kept]
        self.host_memory = host_memory()
        self.programs: set[int] = set()  # the programs compiled, by identity of their costs (one per compile, shared)
        self.today = self.measure(())
        self.today_residuals = program.residual_bytes({})  # shared with the site table
        self.options: list[list[_Option]] = []  # per site; the first is the site as written
        for i, site in enumerate(self.sites):
            row = []
            for c in candidates(site, self.host_memory):
                if c.edit is None:
                    row.append(_Option(i, c, self.today, self.today_residuals))
                    continue
                change = (_Option(i, c, self.today, 0),)
                row.append(_Option(i, c, self.measure(change), program.residual_bytes(self.edits(change))))
            self.options.append(row)
        # every assignment compiled, by its candidates' names: today's, each single-site change, no checkpoint at all
        self.known: dict[tuple[str, ...], tuple[Assignment, Costs]] = {}
        for row in self.options:
            for o in row:
                choice = tuple(o if r is row else r[0] for r in self.options)
                self.known[_names(choice)] = (choice, o.costs)
        removed = tuple(next(o for o in row if o.candidate.name == "none") for row in self.options)
        self.confirm(removed)
        self.no_checkpoint = self.known[_names(removed)][1]

    def edits(self, choice: Assignment) -> dict[int, Edit]:
        from remat_lint.trace.worker.costs import edits_for

        out: dict[int, Edit] = {}
        for o in choice:
            if o.candidate.edit is not None:
                out.update(edits_for([self.sites[o.site]], o.candidate.edit))
        return out

    def measure(self, choice: Assignment) -> Costs:
        """The compiled costs of the program with ``choice``'s sites changed (the others as written)."""
        costs = self.program.costs(self.edits(choice))
        self.programs.add(id(costs))  # the program's cache returns one Costs per compiled program
        return costs

    def confirm(self, choice: Assignment) -> int:
        """Compile a whole assignment (one candidate per site); 1 if that took a new compile, 0 if
        the assignment, or another that is the same program, was compiled before."""
        if _names(choice) in self.known:
            return 0
        before = len(self.programs)
        self.known[_names(choice)] = (choice, self.measure(choice))
        return len(self.programs) - before

    def prediction_error(self) -> Costs:
        """The largest error of the additive prediction over the assignments compiled: sites that
        interact (a checkpoint nested in another's body) make it miss in either direction."""
        from remat_lint.trace.worker.costs import Costs

        errors = [abs(costs - self.predict(choice)) for choice, costs in self.known.values()]
        return Costs(max(e.temp_bytes for e in errors), max(e.flops for e in errors))

    def next_to_confirm(self, considered: list[tuple[Assignment, Costs]], limit: int) -> Assignment | None:
        """The next assignment worth compiling, in order of fewest predicted FLOPs: not compiled,
        predicted to fit within the largest prediction error measured so far, and, within that error,
        able to beat the cheapest compiled fit by more than ``PREDICTION_TOLERANCE``. None when no
        such assignment is left: the cheapest compiled fit is then the cheapest fit within the
        measured error (the error grows with every compile, which re-opens assignments)."""
        error = self.prediction_error()
        best = min((c.flops for _, c in self.known.values() if c.temp_bytes <= limit), default=math.inf)
        open_ = [
            (a, p)
            for a, p in considered
            if (p - error).temp_bytes <= limit
            and (p - error).flops < best * (1 - PREDICTION_TOLERANCE)
            and _names(a) not in self.known
        ]
        return min(open_, key=lambda t: t[1].flops_first)[0] if open_ else None

    def predict(self, choice: Assignment) -> Costs:
        """Today's costs plus each site's own change (sites measured one at a time)."""
        from remat_lint.trace.worker.costs import Costs

        return self.today + sum((o.costs - self.today for o in choice), Costs(0, 0.0))

    def assignments(self) -> list[tuple[Assignment, Costs]]:
        """Every assignment with its predicted costs when there are few, else a greedy walk from the
        assignment cheapest in memory, each site in turn moved to its fewest FLOPs."""
        if math.prod(len(row) for row in self.options) <= EXHAUSTIVE_LIMIT:
            return [(choice, self.predict(choice)) for choice in itertools.product(*self.options)]
        current = [min(row, key=lambda o: o.costs.memory_first) for row in self.options]
        walk = [(tuple(current), self.predict(tuple(current)))]
        for i, row in enumerate(self.options):
            current[i] = min(row, key=lambda o: o.costs.flops_first)
            walk.append((tuple(current), self.predict(tuple(current))))
        return walk

    def choose(self, budget: Budget) -> dict[str, Any]:
        """The assignment with the fewest FLOPs whose compiled temp fits (see the module doc)."""
        import jax

        limit = budget.limit(self.no_checkpoint.temp_bytes)
        considered = self.assignments()
        compiles = 0
        while compiles < CONFIRMATIONS and (choice := self.next_to_confirm(considered, limit)) is not None:
            compiles += self.confirm(choice)
        proven = choice is None
        fit = [k for k in self.known.values() if k[1].temp_bytes <= limit]
        if not fit:  # confirm the assignment predicted smallest, which may beat every one compiled
            smallest = min(considered, key=lambda a: a[1].memory_first)[0]
            self.confirm(smallest)
            fit = [k for k in self.known.values() if k[1].temp_bytes <= limit]
        # the cheapest compiled fit; else the smallest peak compiled
        choice, got = (
            min(fit, key=lambda k: k[1].flops_first)
            if fit
            else min(self.known.values(), key=lambda k: k[1].memory_first)
        )
        fits = bool(fit)
        return {
            "budget": budget.text,
            "budget_bytes": limit,
            "fits": fits,
            "today": self.today.to_json(),
            "no_checkpoint": self.no_checkpoint.to_json(),
            "chosen" if fits else "smallest": got.to_json(),
            "predicted": self.predict(choice).to_json(),
            "compiles": len(self.programs),
            "proven": proven,  # no assignment left that could beat the choice within the measured prediction error
            "candidates": sum(len(row) - 1 for row in self.options),
            "backend": jax.default_backend(),
            # only where a site declares names, which offloading would move
            "offload_note": ""
            if self.host_memory or not any(declared_names(s) for s in self.sites)
            else offload_note(jax.default_backend()),
            "sites": [self.site_row(o) for o in choice],
            "site_options": [  # every candidate of every site, measured with only that site changed
                {
                    "line": self.lines[i],
                    "function": site.function,
                    "options": [
                        {"candidate": o.candidate.name, "residual_bytes": o.residual_bytes, **o.costs.to_json()}
                        for o in self.options[i]
                    ],
                }
                for i, site in enumerate(self.sites)
            ],
            # predicted, for --plot: each distinct point once (assignments often tie)
            "considered": [list(p) for p in dict.fromkeys(c.memory_first for _, c in considered)],
            "front": [
                {**c.to_json(), "assignment": [o.candidate.name for o in a]} for a, c in pareto_front(considered)
            ],
        }

    def site_row(self, o: _Option) -> dict[str, Any]:
        site = self.sites[o.site]
        return {
            "line": self.lines[o.site],
            "function": site.function,
            "today": _policy_text(site).replace(" (default)", "") + ("" if site.prevent_cse else ", prevent_cse=False"),
            "chosen": o.candidate.name,
            "policy": o.candidate.policy,
            "residual_bytes_saved": self.today_residuals - o.residual_bytes,
            "flops_added": o.costs.flops - self.today.flops,
        }


def _names(choice: Assignment) -> tuple[str, ...]:
    return tuple(o.candidate.name for o in choice)


def pareto_front(points: list[tuple[Assignment, Costs]]) -> list[tuple[Assignment, Costs]]:
    """The assignments no other beats in both peak temp and FLOPs, by increasing temp."""
    front: list[tuple[Assignment, Costs]] = []
    for a, c in sorted(points, key=lambda p: p[1].memory_first):
        if not front or c.flops < front[-1][1].flops:
            front.append((a, c))
    return front


def _policy_text(site: Site) -> str:
    """The site's policy as a user writes it (``save_only_these_names('h')``, not the object's repr)."""
    names = getattr(site.params["policy"], "saveable_names", None)
    if type(site.params["policy"]).__name__ == "SaveOnlyTheseNames" and names is not None:
        return f"save_only_these_names({', '.join(repr(n) for n in sorted(names))})"
    return site.policy


# --- text output (main process) ---------------------------------------------------------------------


def format_plans(plans: list[Any], xla_flags: str) -> str:
    """``plans``: the driver's reports (``path``, ``target``, ``report``: ``Search.choose``'s dict)."""
    from remat_lint.engine.sources import display_path
    from remat_lint.trace.devices import per_device_note
    from remat_lint.trace.protocol import CPU_XLA_FLAGS
    from remat_lint.trace.units import byte_size, flop_number

    out = []
    for plan in plans:
        rep = plan.report
        budget = rep["budget_bytes"]
        whose = "" if any(c.isalpha() for c in rep["budget"]) else f", {rep['budget']} of the no-checkpoint peak temp"
        out.append(
            f"{display_path(plan.path)}: --memory-budget {rep['budget']} for {plan.target}: {byte_size(budget)}{whose}"
        )
        out.append(
            f"  {'line':>5}  {'site':<18} {'today':<36} {'chosen':<34} {'residuals saved':>15} {'FLOPs added':>12}"
        )
        for s in rep["sites"]:
            out.append(
                f"  {s['line'] if s['line'] is not None else '?':>5}  {s['function'][:18]:<18} {s['today'][:36]:<36} "
                f"{s['chosen'][:34]:<34} {byte_size(s['residual_bytes_saved']):>15} {flop_number(s['flops_added']):>12}"
            )
        out.append(f"  {'program':<15} {'peak temp':>10} {'FLOPs':>12}")
        rows = [
            ("today", rep["today"]),
            ("chosen" if rep["fits"] else "smallest found", rep.get("chosen") or rep.get("smallest")),
            ("no checkpoint", rep["no_checkpoint"]),
        ]
        for label, costs in rows:
            out.append(f"  {label:<15} {byte_size(costs['temp_bytes']):>10} {flop_number(costs['flops']):>12}")
        if not rep["fits"]:
            out.append(
                f"  nothing fits {byte_size(budget)}: the smallest peak temp reached is {byte_size(rep['smallest']['temp_bytes'])}"
            )
        confirmed = (
            "the choice was compiled to confirm it" if rep["fits"] else "the smallest was compiled to measure it"
        )
        if rep["fits"] and not rep.get("proven", True):
            confirmed += (
                f"; the search stopped at its limit of {CONFIRMATIONS} confirming compiles: an assignment predicted"
                " cheaper was not compiled, so the choice is not proven the cheapest that fits"
            )
        out.append(
            f"  {rep['compiles']} programs compiled for {rep['candidates']} candidates over {len(rep['sites'])} site(s); {confirmed}"
        )
        if rep.get("devices", 1) > 1:
            out.append(f"  {per_device_note(rep['devices'])}; the budget applies to each device")
        if rep.get("offload_note"):
            out.append(f"  {rep['offload_note']}")
        if rep.get("backend") == "cpu":
            flag = f" with {CPU_XLA_FLAGS}" if CPU_XLA_FLAGS in xla_flags else ""
            out.append(
                f"  numbers from XLA:CPU{flag}: a GPU/TPU compiles other fusions and buffers; its peak temp differs"
            )
        out.append("")
    return "\n".join(out) + ("\n" if out else "")
