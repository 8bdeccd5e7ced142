"""What crosses between the two sides of --trace, as typed data; no JAX imported here: the request
the driver sends a worker (JSON on its stdin) and the replies the worker writes back (JSON lines).

Each finding carries its rule's ``TraceCheck`` (declared on the rule class as ``trace_check``), so
the worker judges it from data, never from the wording of its message.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from remat_lint.trace.checks import TraceCheck

# XLA:CPU merges a checkpoint's recomputation away without this flag: workers run with it (driver/dispatch.py),
# and compiled costs measured without it are not reported (worker/session.py, worker/budget.py).
CPU_XLA_FLAGS = "--xla_disable_hlo_passes=cse_barrier_expander"
# --trace-run: the driver puts SITECUSTOMIZE on the command's PYTHONPATH and names two files in its
# environment, read and written by the recorder (recorder.py) in the command's processes.
REQUESTS_ENV = "REMAT_LINT_TRACE_RUN"  # a JSON file: the WorkerRequest of each module to judge
OUT_ENV = "REMAT_LINT_TRACE_OUT"  # JSON lines written here, each tagged with its module's path
SITECUSTOMIZE = (  # every Python process of the command runs this at startup
    "import os\n"
    f"if os.environ.get({REQUESTS_ENV!r}):\n"
    "    try:\n"
    "        from remat_lint.trace.worker import recorder\n"
    "    except ImportError:  # another Python, without remat-lint: it records nothing\n"
    "        pass\n"
    "    else:\n"
    "        recorder.install()\n"
)


# The codes of what discovery finds in a recorded program (worker/discovery.py, driver/dynamic_findings.py).
NO_SAVING = "REM401"
UNKNOWN_NAMES = "REM403"


@dataclass
class Item:
    """A static finding as the worker sees it."""

    id: int
    code: str
    line: int
    end_line: int
    column: int = 0  # 0-based, as Python's instruction positions count
    end_column: int = 0
    on_site: bool = False  # the finding's line is a checkpoint site (``jax.checkpoint(...)``, a decorator)
    check: TraceCheck | None = None  # None: nothing a trace can show
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def span(self) -> range:
        return range(self.line, self.end_line + 1)

    @property
    def position(self) -> tuple[int, int, int, int]:
        return (self.line, self.column, self.end_line, self.end_column)


@dataclass
class WorkerRequest:
    path: str  # the module whose findings are judged
    root: str  # the directory it is imported from
    config_root: str  # where [tool.remat-lint] lives (targets are relative to it)
    trace: dict[str, Any]  # the [tool.remat-lint.trace] table
    findings: list[Item]
    sites: list[int]  # lines of the module's checkpoint sites
    memory_budget: str = ""  # --memory-budget (budget.py): plan each differentiated target's policies
    run: str = ""  # --trace-run CMD: what to say when it recorded nothing that reaches a finding

    def to_json(self) -> str:
        import json  # only --trace sends requests: a lint run needs no json

        return json.dumps(dataclasses.asdict(self), default=str)

    @classmethod
    def from_json(cls, text: str) -> WorkerRequest:
        import json

        raw = json.loads(text)
        items = []
        for f in raw.get("findings", []):
            check = f.get("check")
            items.append(Item(**{**f, "check": TraceCheck(**check) if check else None}))
        return cls(
            raw["path"],
            raw["root"],
            raw.get("config_root") or raw["root"],
            raw.get("trace") or {},
            items,
            list(raw.get("sites", [])),
            raw.get("memory_budget", ""),
            raw.get("run", ""),
        )


# --- replies: what a worker (or the --trace-run recorder) writes back, one JSON line each ------------


@dataclass
class BackendReply:
    """The worker's first line: the JAX backend it runs on and the XLA flags it ran with."""

    backend: str
    xla_flags: str = ""


Status = Literal["unconfirmed", "refuted", "confirmed"]
# The stronger verdict wins where two targets or runs judge one finding.
RANK: dict[Status, int] = {"unconfirmed": 1, "refuted": 2, "confirmed": 3}


@dataclass(frozen=True)
class Verdict:
    """What --trace found about one finding (``Finding.trace``); the JSON and SARIF outputs show
    ``to_json()``: ``status``, ``evidence``, ``reason``, and the keys below where they are set."""

    status: Status
    reason: str
    # what the judge measured (target, stage, exception, shapes, costs...); None: nothing ran
    evidence: dict[str, Any] | None = None
    sites: tuple[dict[str, Any], ...] = ()  # the reports of the module's checkpoint sites (residuals.py)
    budget: tuple[dict[str, Any], ...] = ()  # --memory-budget plans of the module's targets (budget.py)
    found_by: str = ""  # "trace", or "static, confirmed by trace" (driver/dynamic_findings.py)

    @property
    def rank(self) -> int:
        return RANK[self.status]

    def to_json(self) -> dict[str, Any]:
        extra = {"sites": list(self.sites), "budget": list(self.budget), "found_by": self.found_by}
        return {
            "status": self.status,
            "evidence": self.evidence,
            "reason": self.reason,
            **{key: value for key, value in extra.items() if value},
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Verdict:
        if raw["status"] not in RANK:
            raise ValueError(f"unknown verdict status {raw['status']!r}")
        return cls(
            raw["status"],
            raw["reason"],
            raw.get("evidence"),
            tuple(raw.get("sites") or ()),
            tuple(raw.get("budget") or ()),
            raw.get("found_by") or "",
        )


@dataclass
class VerdictReply:
    """One finding's verdict."""

    finding: int  # the ``Item.id`` of the request
    trace: Verdict


@dataclass
class SiteReply:
    """A checkpoint site's residuals and policies, as a target differentiated it (residuals.py)."""

    site: dict[str, Any]
    target: str


@dataclass
class BudgetReply:
    """--memory-budget: the policies of one target's program that fit (budget.py)."""

    budget: dict[str, Any]
    target: str


@dataclass
class AppliedReply:
    """--trace-run discovery: the static site lines a recorded program applied (discovery.py)."""

    applied: list[int]
    unattributed: bool  # which sites it applied is unknown (a checkpoint matched no static site, or no build)
    target: str


@dataclass
class DiscoveredReply:
    """--trace-run discovery: a finding only the recorded program shows (discovery.py)."""

    discovered: dict[str, Any]
    target: str


@dataclass
class NoteReply:
    """Why a target said nothing, or what failed: a warning of the run."""

    note: str


@dataclass
class RecordedReply:
    """--trace-run: what one process of the command recorded, before it judges (recorder.py)."""

    recorded: list[str]  # "grad of loss", ...
    errors: list[str]  # exceptions raised through checkpointed functions


@dataclass
class ProgressReply:
    """Where a worker (or a --trace-run process) is: ``done`` of the ``total`` differentiated programs
    it plans to compile, and the one it starts (``program``; "" once it is finished). A process
    that finds more programs than it planned (a fallback, a shape search) raises ``total``.
    ``stage`` "recorded": the command's process recorded a differentiated call (``done`` so far)."""

    done: int
    total: int
    program: str = ""
    stage: Literal["compiling", "recorded"] = "compiling"
    process: int = 0  # the process id: the command of a --trace-run may run several


Reply = (
    BackendReply
    | VerdictReply
    | SiteReply
    | BudgetReply
    | AppliedReply
    | DiscoveredReply
    | NoteReply
    | RecordedReply
    | ProgressReply
)
_KINDS: dict[str, type[Reply]] = {
    "backend": BackendReply,
    "verdict": VerdictReply,
    "site": SiteReply,
    "budget": BudgetReply,
    "applied": AppliedReply,
    "discovered": DiscoveredReply,
    "note": NoteReply,
    "recorded": RecordedReply,
    "progress": ProgressReply,
}
_KIND_OF = {cls: kind for kind, cls in _KINDS.items()}


def encode(reply: Reply, path: str = "") -> str:
    """One JSON line; ``path``: the module it is about, where one stream serves several (--trace-run)."""
    import json

    tagged = {"kind": _KIND_OF[type(reply)], **dataclasses.asdict(reply), **({"path": path} if path else {})}
    return json.dumps(tagged, default=str)


def decode(line: str) -> tuple[Reply, str] | None:
    """A reply and the module path it names ("" for none); None for a line that is not a reply (a
    worker killed mid-line, a user's process writing to the same file)."""
    import json

    try:
        raw = json.loads(line)
        kind = _KINDS[raw.pop("kind")]
        path = raw.pop("path", "")
        if kind is VerdictReply:
            raw["trace"] = Verdict.from_json(raw["trace"])
        return kind(**raw), path
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
