"""What names a ``checkpoint_name(x, name)`` can declare (REM008).

A name is one of: the literals the value layer finds (a literal, a module constant, a config
field's default, a dict entry...); a pattern for a name built at run time (an f-string, ``%``,
``.format``, ``+``: ``f"layer_{i}_out"`` is ``layer_.*_out``); for a parameter, its default and
what the calls of its function in this module pass; for ``self.attr``, what the class body and
the class's methods assign. Anything else is unknowable, and the rule says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import libcst as cst

from remat_lint.analysis.semantic import SemanticModel
from remat_lint.analysis.values import Values

_MAX_DEPTH = 4
_MAX_ALTERNATIVES = 16
_ANYTHING = ".*"
_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[diouxXeEfFgGcrsa]")
_FORMAT_FIELD = re.compile(r"\{[^{}]*\}")


@dataclass
class Names:
    """Exact names and regular expressions (``re.fullmatch``) a name can be one of."""

    literals: set[str] = field(default_factory=set)
    patterns: set[str] = field(default_factory=set)

    def regexes(self) -> list[str]:
        return [re.escape(name) for name in sorted(self.literals)] + sorted(self.patterns)


class CheckpointNames:
    def __init__(self, model: SemanticModel, values: Values) -> None:
        self.model = model
        self.values = values

    def of(self, expr: cst.BaseExpression, depth: int = 0) -> Names | None:
        """The names ``expr`` can be, or None when some of them cannot be known."""
        if depth > _MAX_DEPTH:
            return None
        possible = self.values.possible(expr)
        if possible and all(v.kind in ("str", "int") and isinstance(v.literal, (str, int)) for v in possible):
            return Names({str(v.literal) for v in possible})  # an int: a hole of a name built from it
        pattern = self._pattern(expr, depth)
        if pattern is not None:
            return None if pattern == _ANYTHING else Names(patterns={pattern})
        if isinstance(expr, cst.Name):
            return self._parameter(expr, depth)
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            return self._self_attribute(expr, depth)
        return None

    def _pattern(self, expr: cst.BaseExpression, depth: int) -> str | None:
        """A regular expression for a string built at run time; None when ``expr`` builds none."""
        if isinstance(expr, cst.FormattedString):
            parts = []
            for part in expr.parts:
                if isinstance(part, cst.FormattedStringText):
                    parts.append(re.escape(part.value.replace("{{", "{").replace("}}", "}")))
                elif isinstance(part, cst.FormattedStringExpression) and not (part.format_spec or part.conversion):
                    parts.append(self._alternatives(part.expression, depth))
                else:
                    parts.append(_ANYTHING)
            return "".join(parts)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
            left, right = self._alternatives(expr.left, depth), self._alternatives(expr.right, depth)
            return None if left == right == _ANYTHING else left + right
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Modulo):
            template = _literal(expr.left)
            filled = expr.right
            fills = [e.value for e in filled.elements] if isinstance(filled, cst.Tuple) else [filled]
            if template is None:
                return None
            return _holes(template.replace("%%", "\0"), _PERCENT_SPEC, [self._alternatives(e, depth) for e in fills])
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "format":
            template = _literal(expr.func.value)
            if template is not None and not any(a.star for a in expr.args):
                alternatives = [self._alternatives(a.value, depth) for a in expr.args if a.keyword is None]
                fields = _FORMAT_FIELD.findall(template.replace("{{", "").replace("}}", ""))
                in_order = all(f == "{}" for f in fields)  # ``{0}``, ``{name}``, specs: holes match anything
                return _holes(
                    template.replace("{{", "\1").replace("}}", "\2"), _FORMAT_FIELD, alternatives if in_order else []
                )
        return None

    def _alternatives(self, expr: cst.BaseExpression, depth: int) -> str:
        """A regular expression for what ``expr`` gives when formatted into a string."""
        names = self.of(expr, depth + 1)
        if names is None:
            return _ANYTHING
        regexes = names.regexes()
        return f"(?:{'|'.join(regexes)})" if 0 < len(regexes) <= _MAX_ALTERNATIVES else _ANYTHING

    def _parameter(self, name: cst.Name, depth: int) -> Names | None:
        """A parameter: its default and the arguments of this module's calls of its function."""
        bindings = self.model.bindings_at(name)
        if not bindings or len(bindings) != 1 or bindings[0].kind != "param":
            return None
        param = bindings[0].node
        info = self.model.enclosing_function(param)
        if info is None or not isinstance(info.node, cst.FunctionDef) or not isinstance(param, cst.Param):
            return None
        function = info.node
        positional = [*function.params.posonly_params, *function.params.params]
        index = next((i for i, p in enumerate(positional) if p is param), None)
        sources: list[cst.BaseExpression] = [param.default] if param.default is not None else []
        calls = [call for call in self.model.calls if self.model.definition(call.func) is function]
        if not calls or info.class_node is not None:
            return None  # called from elsewhere (another module: its literals count as mentioned)
        for call in calls:
            if any(arg.star for arg in call.args):
                return None
            argument = _argument(call, param.name.value, index)
            if argument is None and param.default is None:
                return None
            if argument is not None:
                sources.append(argument)
        return self._union(sources, depth)

    def _self_attribute(self, expr: cst.Attribute, depth: int) -> Names | None:
        """``self.attr``: the class body's ``attr = ...`` / ``attr: str = ...`` and the methods'
        ``self.attr = ...``."""
        info = self.model.enclosing_function(expr)
        cls = info.class_node if info is not None else None
        if cls is None:
            return None
        attr = expr.attr.value
        sources: list[cst.BaseExpression] = []
        for statement in cls.body.body:
            for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
                if isinstance(small, cst.Assign) and any(_is_name(t.target, attr) for t in small.targets):
                    sources.append(small.value)
                elif isinstance(small, cst.AnnAssign) and _is_name(small.target, attr) and small.value is not None:
                    sources.append(small.value)
        for node in self.model.attributes:
            if node.attr.value == attr and isinstance(node.value, cst.Name) and node.value.value == "self":
                parent = self.model.parent(node)
                if isinstance(parent, cst.AssignTarget) and any(a is cls for a in self.model.ancestors(node)):
                    assign = self.model.parent(parent)
                    if not isinstance(assign, cst.Assign):
                        return None
                    sources.append(assign.value)
        return self._union(sources, depth) if sources else None

    def _union(self, sources: list[cst.BaseExpression], depth: int) -> Names | None:
        union = Names()
        for source in sources:
            names = self.of(source, depth + 1)
            if names is None:
                return None
            union.literals |= names.literals
            union.patterns |= names.patterns
        return union


def _holes(template: str, hole: re.Pattern[str], fills: list[str]) -> str:
    """``template`` with its ``hole``s filled by ``fills`` in order when there is one for each,
    else matching anything (``\\0``, ``\\1``, ``\\2`` stand for ``%``, ``{``, ``}`` in it)."""
    pieces = [
        re.escape(piece.replace("\0", "%").replace("\1", "{").replace("\2", "}")) for piece in hole.split(template)
    ]
    if len(fills) != len(pieces) - 1:
        fills = [_ANYTHING] * (len(pieces) - 1)
    return pieces[0] + "".join(fill + piece for fill, piece in zip(fills, pieces[1:], strict=True))


def _literal(expr: cst.BaseExpression) -> str | None:
    value = (
        getattr(expr, "evaluated_value", None) if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)) else None
    )
    return value if isinstance(value, str) else None


def _is_name(target: cst.BaseExpression, name: str) -> bool:
    return isinstance(target, cst.Name) and target.value == name


def _argument(call: cst.Call, keyword: str, index: int | None) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    return positional[index].value if index is not None and index < len(positional) else None
