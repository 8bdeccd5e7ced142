"""Positions of reported nodes, computed only for the top-level statements that hold them.

libcst's PositionProvider re-generates the code of the whole module (measured: 2-6x the parse on
a 50,000-line file), although a file with findings usually has them in a few statements. This
computes positions on a one-statement module and shifts them by the statement's first line, which
Python's ``ast`` of the same source gives. The shifted statement must reproduce the source lines
exactly; otherwise (or without an ``ast``) the whole module's positions are computed as before.
"""

from __future__ import annotations

import ast
from collections import OrderedDict
from typing import Any, Mapping, Sequence

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider

# Statements whose positions are kept (the most recently used): a statement's map holds a range
# for each of its nodes, about 6 KiB for a one-line call, and a file can have a finding on each of
# 20,000 statements; a rule's findings come in file order, so a few suffice.
KEPT_STATEMENTS = 64


class Positions:
    def __init__(
        self, module: cst.Module, source: str, parents: dict[int, cst.CSTNode], tree: ast.Module | None
    ) -> None:
        self.module = module
        self.source = source
        self.parents = parents
        self.tree = tree
        self._top_level: dict[int, tuple[ast.stmt, ast.stmt]] | None = None
        self._statements: OrderedDict[int, tuple[Any, int] | None] = OrderedDict()
        self._whole: Mapping[cst.CSTNode, CodeRange] | None = None
        self._source_lines: list[str] | None = None

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        statement = self._statement_of(node)
        entry = self._shifted(statement) if statement is not None else self._holding(node)
        if entry is None:
            return self._everything()[node]
        positions, offset = entry
        span = positions[node]
        return CodeRange(
            CodePosition(span.start.line + offset, span.start.column),
            CodePosition(span.end.line + offset, span.end.column),
        )

    def start_line(self, node: cst.CSTNode) -> int:
        """``self[node].start.line``, from ``ast`` when a statement holding ``node`` is on one line
        (a top-level one, or one in the body of a def, class, loop, ``if`` or ``with`` in one), or
        the bases of a class holding it are on its first line: a position costs a codegen of the
        whole top-level statement (REM003's lookups, ``Generic[T]`` in bases among them)."""
        chain = [node]  # up to the module
        while (parent := self.parents.get(id(chain[-1]))) is not None:
            chain.append(parent)
        pairs = self._pairs()
        for i in range(len(chain) - 1, -1, -1):
            found = pairs.get(id(chain[i]))
            if found is None:
                continue
            first, last = found
            if _first_line(first) == last.end_lineno:
                return last.end_lineno
            if i and _in_bases(chain[i - 1], first):
                return first.lineno
            pairs = _nested(chain[i], first)
        return self[node].start.line

    def _holding(self, node: cst.CSTNode) -> tuple[Any, int] | None:
        """A statement already located that holds ``node`` (the parents map skips some nodes,
        such as an attribute's name, that fixes replace)."""
        for entry in self._statements.values():
            if entry is not None and node in entry[0]:
                return entry
        return None

    def _everything(self) -> Mapping[cst.CSTNode, CodeRange]:
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
        if id(statement) in self._statements:
            self._statements.move_to_end(id(statement))
        else:
            self._statements[id(statement)] = self._compute(statement)
            if len(self._statements) > KEPT_STATEMENTS:
                self._statements.popitem(last=False)
        return self._statements[id(statement)]

    def _compute(self, statement: cst.CSTNode) -> tuple[Any, int] | None:
        found = self._pairs().get(id(statement))
        if found is None:
            return None
        first_line = _first_line(found[0])
        sub = self.module.with_changes(body=[statement], header=(), footer=())
        # The statement's first token follows its leading (blank or comment) lines, and those of
        # its first decorator.
        decorators = getattr(statement, "decorators", ())
        leading = len(statement.leading_lines) + (len(decorators[0].leading_lines) if decorators else 0)  # type: ignore[attr-defined]  # ``statement`` is a statement: it has leading_lines
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

    def _pairs(self) -> dict[int, tuple[ast.stmt, ast.stmt]]:
        """Top-level libcst statement -> its first and last ``ast`` statements."""
        if self._top_level is None:
            self._top_level = _pairs(self.module.body, self.tree.body) if self.tree is not None else {}
        return self._top_level


# Compound statements whose body is a list of statements in both trees.
_BODIES = (
    (cst.FunctionDef, (ast.FunctionDef, ast.AsyncFunctionDef)),
    (cst.ClassDef, ast.ClassDef),
    (cst.For, (ast.For, ast.AsyncFor)),
    (cst.While, ast.While),
    (cst.With, (ast.With, ast.AsyncWith)),
    (cst.If, ast.If),
)


def _pairs(statements: Sequence[cst.CSTNode], body: list[ast.stmt]) -> dict[int, tuple[ast.stmt, ast.stmt]]:
    """libcst statement -> its first and last ``ast`` statements (one libcst ``SimpleStatementLine``
    holds every ``;``-separated statement of its line); none when the two lists disagree."""
    pairs, index = {}, 0
    for statement in statements:
        count = len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
        if index + count > len(body):
            return {}
        pairs[id(statement)] = (body[index], body[index + count - 1])
        index += count
    return pairs


def _nested(statement: cst.CSTNode, tree: ast.stmt) -> dict[int, tuple[ast.stmt, ast.stmt]]:
    """``_pairs`` of the statements in the body of a compound statement (``tree``: its ``ast``)."""
    block = getattr(statement, "body", None)
    if not isinstance(block, cst.IndentedBlock) or not any(
        isinstance(statement, c) and isinstance(tree, a) for c, a in _BODIES
    ):
        return {}
    return _pairs(block.body, tree.body)  # type: ignore[attr-defined]  # ``_BODIES`` pairs only node types with a body


def _in_bases(child: cst.CSTNode, tree: ast.stmt) -> bool:
    """Whether ``child``, of the statement ``tree`` is the ``ast`` of, is a base or keyword of a
    class whose bases and keywords are all on the line of ``class``."""
    if not isinstance(child, cst.Arg) or not isinstance(tree, ast.ClassDef):
        return False
    nodes: list[ast.expr | ast.keyword] = [*tree.bases, *tree.keywords]
    return all(n.lineno == n.end_lineno == tree.lineno for n in nodes)


def _first_line(tree: ast.stmt) -> int:
    """The line of a statement's first token: its first decorator's, if any."""
    decorators: list[ast.expr] = getattr(tree, "decorator_list", [])
    return min([tree.lineno, *(d.lineno for d in decorators)])
