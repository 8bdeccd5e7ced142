"""What --trace can show about a rule's findings, as the rule declares it (``Rule.trace_check``).

Apart from ``protocol.py``, which carries it to the worker, because every lint run imports the
rules' base class and needs only this of the trace: the protocol's dataclasses cost a lint run
about 4 ms to import.
"""

from __future__ import annotations

from dataclasses import dataclass

# How --trace judges a rule's findings (evidence.py, costs.py).
EVIDENCE = ("exception", "static-argnames", "saved-name", "cost", "trace-time-effect", "callback-count")
# What a cost rule claims (costs.py): no memory saved for FLOPs spent; nothing saved, nothing spent;
# the saving lost to prevent_cse=False.
COST_CLAIMS = ("recompute-for-nothing", "saves-nothing", "cse-lost")


@dataclass(frozen=True)
class TraceCheck:
    """What a trace can show about a rule's findings.

    ``raises``: the exceptions the misuse raises (class name, start of the message) in jax 0.10.2 /
    flax 0.12.8; one of them at the flagged checkpoint confirms a finding, for every evidence kind.
    ``refutes``: every finding of the rule predicts one of ``raises``, so a trace through the
    checkpoint without one refutes it (at declared or recorded shapes).
    ``cost``: for ``cost`` rules, the claim compiled costs check (costs.py).
    """

    evidence: str
    raises: tuple[tuple[str, str], ...] = ()
    refutes: bool = False
    cost: str = ""

    def __post_init__(self) -> None:
        if self.evidence not in EVIDENCE:
            raise ValueError(f"unknown trace evidence {self.evidence!r} (known: {', '.join(EVIDENCE)})")
        if (self.evidence == "cost") != (self.cost in COST_CLAIMS):
            raise ValueError(f"a cost check needs a claim ({', '.join(COST_CLAIMS)}), other checks none")
        object.__setattr__(self, "raises", tuple(tuple(r) for r in self.raises))
