"""What a rule reports: a Finding with a span and an optional Fix, in plain picklable data.

Rows are 1-based and columns 0-based code points, as libcst's PositionProvider gives them;
reporters convert to each output format's convention.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:  # a name for the annotation only: findings import nothing of the project
    from remat_lint.trace.protocol import Verdict


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        """Lower is more severe (used to order the github output)."""
        return {"error": 0, "warning": 1, "info": 2}[self.value]


class Applicability(str, enum.Enum):
    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY_ONLY = "display-only"  # shown, never applied (ruff's term): a ``# noqa`` covers a line it changes


@dataclass(frozen=True, order=True)
class Position:
    row: int  # 1-based
    column: int  # 0-based, in code points


@dataclass(frozen=True)
class TextEdit:
    """Replace the text from ``start`` to ``end`` by ``content`` (a fix's edit)."""

    start: Position
    end: Position
    content: str


@dataclass(frozen=True)
class Fix:
    message: str
    applicability: Applicability
    edits: tuple[TextEdit, ...]


def first_sentence_end(text: str) -> int | None:
    """Where the first sentence of a message ends (after its ``.`` or ``?``), or None when the message
    is one sentence. Punctuation inside backticks (code, quoted exceptions) does not end a sentence."""
    in_code = False
    for i, char in enumerate(text):
        if char == "`":
            in_code = not in_code
        elif char in ".?" and not in_code and text.startswith(" ", i + 1):
            return i + 1
    return None


@dataclass(frozen=True)
class RelatedLocation:
    """Another place a finding depends on (the wrap whose ``static_argnums`` a call breaks), in
    another file or the same one: a note in ``full``, a field in JSON, SARIF's ``relatedLocations``."""

    path: str
    start: Position
    message: str


@dataclass
class Finding:
    code: str
    name: str
    severity: Severity
    message: str
    path: str
    start: Position
    end: Position
    fix: Fix | None = None
    trace: Verdict | None = None  # set by --trace
    # Rule-specific data that a project-wide pass needs (for example the name REM008 looks up).
    data: dict[str, Any] = field(default_factory=dict)
    # In a notebook, for the reporters: the 1-based cell, rows then counted within it (sources.in_cells).
    cell: int | None = None
    related: tuple[RelatedLocation, ...] = ()

    @property
    def title(self) -> str:
        """The message's first sentence, which states the problem and stands alone: what
        ``concise``, GitHub titles, flake8 and the JSON ``message`` show."""
        end = first_sentence_end(self.message)
        return self.message if end is None else self.message[:end].rstrip(".")

    @property
    def why(self) -> str:
        """The rest of the message: the measured explanation (``full``, JSON ``detail``, SARIF)."""
        end = first_sentence_end(self.message)
        return "" if end is None else self.message[end:].strip()

    @property
    def sort_key(self) -> tuple[str, int, int, int, str]:
        return (self.path, self.cell or 0, self.start.row, self.start.column, self.code)


@dataclass(frozen=True)
class Candidate:
    """A finding that only the project phase can confirm (a project-wide rule's ``Rule.candidate``).

    ``finding`` is located, fixed and ``# noqa``-checked like any finding; it is reported only when
    the rule's ``check_project`` returns it (reworded in place) or builds findings from it (at other
    modules' calls). Plain picklable data: candidates live in the result cache and cross processes.
    """

    finding: Finding
    # Names the decision needs (``loss_fn``, ``Block``): files that mention one are read for the project
    # although the prefilter rejects them (a ``train.py`` that only imports the loss).
    symbols: tuple[str, ...]
    values: Mapping[str, Any] = field(default_factory=dict)  # what ``check`` saw that ``check_project`` needs
