"""Jupyter notebooks as the linter sees them: the code cells joined into one Python text, the
map from its rows back to cells, and fixes written back into the cells (ruff's notebook
``SourceKind``). A ``.py`` file is a ``SourceFile``; both have ``text``, ``apply`` and
``data``. ``display_path`` is how a source's path is shown.

IPython syntax is not Python: a line magic, shell escape or help query (``%timeit f(x)``,
``!pip install jax``, ``files = !ls``, ``jax.checkpoint?``) is linted as ``pass`` at the same
indentation, so rows stay put; a cell magic (``%%bash``) makes its whole cell skipped.

The notebook is read with ``json`` rather than nbformat (not a dependency): a fix changes only
``source`` of the cells it touches, and the file is written back the way Jupyter writes it
(``json.dumps`` with the file's indentation, non-ASCII text as it was, literal or escaped, and
its final newline), so outputs, metadata and the rest of the JSON stay byte for byte.
"""

from __future__ import annotations

import bisect
import copy
import io
import os
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from remat_lint.findings import Finding, Position, TextEdit
from remat_lint.output.fixes import apply_edits

SUFFIX = ".ipynb"
_ESCAPE = re.compile(r"^(\s*)(?:[%!]|[\w.]+\?{1,2}\s*$|\?|[\w.,\s\[\]()*]+=\s*[%!])")


@dataclass
class SourceFile:
    """A decoded source file, with what is needed to write it back byte-for-byte the same way."""

    text: str
    encoding: str = "utf-8"

    @classmethod
    def decode(cls, data: bytes) -> SourceFile:
        """Decode with PEP 263 rules (BOM, coding cookie); raises SyntaxError/UnicodeDecodeError."""
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return cls(data.decode(encoding), encoding)

    def apply(self, edits: Iterable[TextEdit]) -> SourceFile:
        """The file with ``edits`` made (a notebook, sources.Notebook, has the same interface)."""
        return SourceFile(apply_edits(self.text, edits), self.encoding)

    def data(self) -> bytes:
        return self.text.encode(self.encoding)


def display_path(path: str) -> str:
    """Paths under the working directory are shown relative to it, as ruff does."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


@dataclass(frozen=True)
class Cell:
    number: int  # 1-based, among all the notebook's cells (markdown included), as ruff counts
    first_row: int  # its first row in the joined text
    source: str  # the cell's own text, as in the notebook


@dataclass(frozen=True)
class Layout:
    """How the file's JSON is written, to write it back the same way."""

    indent: int | str | None = 1
    final_newline: bool = True
    escaped: bool = False  # non-ASCII text written as \uXXXX escapes (the file is all ASCII)

    @classmethod
    def of(cls, text: str) -> Layout:
        return cls(_indent(text), text.endswith("\n"), text.isascii())

    def dumps(self, raw: dict[str, Any]) -> bytes:
        import json  # here, not at the top: a run without notebooks never needs it

        text = json.dumps(raw, indent=self.indent, ensure_ascii=self.escaped)
        return (text + "\n" if self.final_newline else text).encode("utf-8")


@dataclass
class Notebook:
    raw: dict[str, Any]
    cells: list[Cell]
    text: str  # the code cells joined, magics masked: what the rules read
    layout: Layout = field(default_factory=Layout)
    _starts: list[int] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self._starts = [cell.first_row for cell in self.cells]

    @classmethod
    def decode(cls, data: bytes) -> Notebook:
        """Raises ValueError (UnicodeDecodeError, JSONDecodeError) when this is not a notebook."""
        import json  # here, not at the top: a run without notebooks never needs it

        text = data.decode("utf-8-sig")
        raw = json.loads(text)
        if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
            raise ValueError("not a Jupyter notebook (no cells)")
        sources = {}
        for number, cell in enumerate(raw["cells"], 1):
            if isinstance(cell, dict) and cell.get("cell_type") == "code":
                source = cell.get("source", "")
                sources[number] = "".join(source) if isinstance(source, list) else str(source)
        return cls.from_cells(raw, sources, Layout.of(text))

    @classmethod
    def from_cells(cls, raw: dict[str, Any], sources: dict[int, str], layout: Layout) -> Notebook:
        cells, parts, row = [], [], 1
        for number, source in sources.items():
            masked = _masked(source)
            if masked is None or not source.strip():
                continue
            cells.append(Cell(number, row, source))
            parts.append(masked if masked.endswith("\n") else masked + "\n")
            row += parts[-1].count("\n")
        return cls(raw, cells, "".join(parts), layout)

    def cell_at(self, row: int) -> tuple[Cell, int]:
        """The cell holding a row of the joined text, and the row within it (1-based)."""
        cell = self.cells[max(bisect.bisect_right(self._starts, row) - 1, 0)]
        return cell, row - cell.first_row + 1

    def apply(self, edits: Iterable[TextEdit]) -> Notebook:
        """The notebook with ``edits`` (joined-text positions) made in its cells. Raises
        ValueError for an edit that spans two cells."""
        by_cell: dict[int, list[TextEdit]] = {}
        for edit in edits:
            cell, row = self.cell_at(edit.start.row)
            end_cell, end_row = self.cell_at(edit.end.row)
            if end_cell is not cell:  # the end of the cell's last line is the next cell's row 1, column 0
                if edit.end.column != 0 or end_row != 1 or end_cell.first_row != cell.first_row + _rows(cell.source):
                    raise ValueError("a fix spans two cells")
                end_row = _rows(cell.source) + 1
            by_cell.setdefault(cell.number, []).append(
                TextEdit(Position(row, edit.start.column), Position(end_row, edit.end.column), edit.content)
            )
        sources = {cell.number: cell.source for cell in self.cells}
        for number, local in by_cell.items():
            sources[number] = apply_edits(sources[number], local)
        raw = copy.deepcopy(self.raw)
        for number in by_cell:  # other cells keep their source exactly as stored (however split)
            cell, source = raw["cells"][number - 1], sources[number]
            cell["source"] = source.splitlines(keepends=True) if isinstance(cell.get("source"), list) else source
        return Notebook.from_cells(raw, sources, self.layout)

    def data(self) -> bytes:
        return self.layout.dumps(self.raw)


def _rows(source: str) -> int:
    return len(source.splitlines()) or 1


def _indent(text: str) -> int | str | None:
    """The indentation of the file's second line, as json.dumps takes it (Jupyter writes 1)."""
    lines = text.splitlines()
    if len(lines) < 2:
        return None
    second = lines[1]
    width = len(second) - len(second.lstrip(" "))
    return width if width else (second[: len(second) - len(second.lstrip())] or None)


def _masked(source: str) -> str | None:
    """The cell as Python: IPython escapes become ``pass``; None for a cell magic's cell."""
    if source.lstrip().startswith("%%"):
        return None
    lines = source.splitlines(keepends=True)
    for i, line in enumerate(lines):
        match = _ESCAPE.match(line)
        if match:
            ending = line[len(line.rstrip("\r\n")) :]
            lines[i] = f"{match.group(1)}pass{ending}"
    return "".join(lines)


def in_cells(findings: list[Finding], notebooks: dict[str, Notebook], sources: dict[str, str]) -> list[Finding]:
    """Findings in notebooks moved to cell positions (``cell`` set, rows within the cell), for the
    reporters; ``sources`` gains each cell's text under ``"path:cell N"``, the finding's place."""
    located = []
    for finding in findings:
        notebook = notebooks.get(finding.path)
        if notebook is None or not notebook.cells:
            located.append(finding)
            continue
        cell, row = notebook.cell_at(finding.start.row)
        shift = cell.first_row - 1
        fix = finding.fix
        if fix is not None:
            fix = replace(
                fix, edits=tuple(replace(e, start=_up(e.start, shift), end=_up(e.end, shift)) for e in fix.edits)
            )
        located.append(
            replace(
                finding,
                start=Position(row, finding.start.column),
                end=_up(finding.end, shift),
                fix=fix,
                cell=cell.number,
            )
        )
        sources[f"{finding.path}:cell {cell.number}"] = cell.source
    return located


def _up(position: Position, rows: int) -> Position:
    return Position(max(position.row - rows, 1), position.column)
