"""Positions of reported nodes, computed only for the top-level statements that hold them.

libcst's PositionProvider re-generates the code of the whole module (measured: 2-6x the parse on
a 50,000-line file), although a file with findings usually has them in a few statements. This
computes positions on a one-statement module and shifts them by the statement's first line, which
Python's ``ast`` of the same source gives. The shifted statement must reproduce the source lines
exactly; otherwise (or without an ``ast``) the whole module's positions are computed as before.
"""

from __future__ import annotations

import ast
from typing import Any

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider


class Positions:
    def __init__(self, module: cst.Module, source: str, parents: dict[int, cst.CSTNode], tree: ast.Module | None) -> None:
        self.module = module
        self.source = source
        self.parents = parents
        self.tree = tree
        self._first_lines: dict[int, int] | None = None
        self._statements: dict[int, tuple[Any, int] | None] = {}
        self._whole: Any = None
        self._source_lines: list[str] | None = None

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        statement = self._statement_of(node)
        entry = self._shifted(statement) if statement is not None else self._holding(node)
        if entry is None:
            return self._everything()[node]
        positions, offset = entry
        span = positions[node]
        return CodeRange(
            CodePosition(span.start.line + offset, span.start.column), CodePosition(span.end.line + offset, span.end.column)
        )

    def _holding(self, node: cst.CSTNode) -> tuple[Any, int] | None:
        """A statement already located that holds ``node`` (the parents map skips some nodes,
        such as an attribute's name, that fixes replace)."""
        for entry in self._statements.values():
            if entry is not None and node in entry[0]:
                return entry
        return None

    def _everything(self) -> Any:
        if self._whole is None:
            self._whole = MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(PositionProvider)
        return self._whole

    def _statement_of(self, node: cst.CSTNode) -> cst.CSTNode | None:
        current: cst.CSTNode | None = node
        while current is not None:
            parent = self.parents.get(id(current))
            if parent is self.module:
                return current
            current = parent
        return None

    def _shifted(self, statement: cst.CSTNode) -> tuple[Any, int] | None:
        if id(statement) not in self._statements:
            self._statements[id(statement)] = self._compute(statement)
        return self._statements[id(statement)]

    def _compute(self, statement: cst.CSTNode) -> tuple[Any, int] | None:
        first_line = self._first_line_of().get(id(statement))
        if first_line is None:
            return None
        sub = self.module.with_changes(body=[statement], header=(), footer=())
        # The statement's first token follows its leading (blank or comment) lines, and those of
        # its first decorator.
        decorators = getattr(statement, "decorators", ())
        leading = len(statement.leading_lines) + (len(decorators[0].leading_lines) if decorators else 0)  # type: ignore[attr-defined]
        offset = first_line - 1 - leading
        lines = sub.code.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if offset < 0 or self._lines()[offset : offset + len(lines)] != lines:
            return None
        return MetadataWrapper(sub, unsafe_skip_copy=True).resolve(PositionProvider), offset

    def _lines(self) -> list[str]:
        if self._source_lines is None:
            self._source_lines = self.source.split("\n")
        return self._source_lines

    def _first_line_of(self) -> dict[int, int]:
        """Top-level libcst statement -> the line of its first token, from ``ast`` (one libcst
        ``SimpleStatementLine`` holds every ``;``-separated statement of its line)."""
        if self._first_lines is None:
            self._first_lines = {}
            body = self.tree.body if self.tree is not None else []
            index = 0
            for statement in self.module.body:
                if index >= len(body):
                    self._first_lines = {}
                    break
                node = body[index]
                self._first_lines[id(statement)] = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
                index += len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
        return self._first_lines
