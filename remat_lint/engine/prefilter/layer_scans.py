"""Whether a file may hold a scan over layers, decided with ``ast`` (no libcst): REM301's part of
the prefilter (stages.py). A file that references a scan but no remat API reaches libcst only
when REM301 could judge one of its scans to run over layers (the rule's ``_over_layers`` and
``_scans_params``), a superset of what it reports or hands to the project phase:

- the text of its ``xs`` argument holds a layer word (comments and brackets around it included);
- an identifier its body could denote holds one: the body expression's names and attributes, the
  values assigned to them anywhere in the file (``body = partial(block_fn, cfg)``,
  ``self.layer = ...``), and the function a ``@nnx.scan(...)`` decorates: a def the body
  denotes is named by one of these;
- Flax's ``variable_axes`` is a dict literal with a ``"params"`` key.

A call "may be a scan" when its callee's last name is ``scan`` or a name that may alias one
(an import ``as``, ``s = jax.lax.scan``). With ``*args`` the positions are unknown: every
argument counts. All of these read words of the source, so a file without a layer word is
rejected before the walk. Measured on the installed jax+flax: of the 9 files kept for a scan
alone, none passes (their scans run over time steps: ``xs``, ``_scan_body``, ``cell_fn``)."""

from __future__ import annotations

import ast
import io
from typing import Iterator

from remat_lint.engine.prefilter.walk import walk

# What "over layers" means to REM301 (also in the names a scan's body or ``xs`` is spelled with).
LAYER_WORDS = ("layer", "block", "param", "weight")
_SCAN = "scan"
_ASSIGNMENTS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)
_BODY_KEYWORDS = ("f", "target")  # lax/hk/nnx.scan's f, nn.scan's target: argument 0


def may_scan_layers(tree: ast.AST, source: str) -> bool:
    if not _has_word(source):  # every test below reads words of the source (a key spelled with escapes aside)
        return False
    scans = _Scans(tree)
    return any(scans.over_layers(call, source) for call in scans.calls)


def _has_word(text: str) -> bool:
    lowered = text.lower()
    return any(word in lowered for word in LAYER_WORDS)


class _Scans:
    """One walk of the module: the calls that may be scans, and every assignment's value by the
    name or attribute it binds."""

    def __init__(self, tree: ast.AST) -> None:
        self.calls: list[ast.Call] = []
        self.decorated: dict[int, str] = {}  # id(decorator call) -> the decorated def's name
        self.values: dict[str, list[ast.AST]] = {}  # name or attribute -> values assigned to it
        aliases = {_SCAN}
        candidates: list[ast.Call] = []
        for node in walk(tree):  # stage 3's walk, at half ast.walk's cost
            kind = type(node)
            if kind is ast.Call:
                candidates.append(node)  # type: ignore[arg-type]
            elif kind in _ASSIGNMENTS:
                targets = node.targets if kind is ast.Assign else [node.target]  # type: ignore[attr-defined]
                for target in targets:
                    for bound, value in _bindings(target, node.value):  # type: ignore[attr-defined]
                        self.values.setdefault(bound, []).append(value)
            elif kind is ast.Import or kind is ast.ImportFrom:
                aliases.update(a.asname for a in node.names if a.asname and a.name.rsplit(".", 1)[-1] == _SCAN)  # type: ignore[attr-defined]
            elif kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
                self.decorated.update((id(d), node.name) for d in node.decorator_list if type(d) is ast.Call)  # type: ignore[attr-defined]
        renames = [(n, _last_name(v)) for n, values in self.values.items() for v in values]
        while True:  # ``s = jax.lax.scan``: the semantic model resolves names bound to a name or attribute
            bound = {n for n, last in renames if last in aliases}
            if bound <= aliases:
                break
            aliases |= bound
        self.calls = [c for c in candidates if _last_name(c.func) in aliases]

    def over_layers(self, call: ast.Call, source: str) -> bool:
        star = any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)
        body = _argument(call, 0, _BODY_KEYWORDS, star)
        xs = _argument(call, 2, ("xs",), star)
        axes = _argument(call, 1, ("variable_axes",), star)
        if any(_has_word(_region(call, arg, source)) for arg in xs):
            return True
        if any(
            isinstance(a, ast.Dict) and any(isinstance(k, ast.Constant) and k.value == "params" for k in a.keys)
            for a in axes
        ):
            return True
        names = {n for arg in body for n in _identifiers(arg)}
        if id(call) in self.decorated:
            names.add(self.decorated[id(call)])
        return any(_has_word(n) for n in self._followed(names))

    def _followed(self, names: set[str]) -> set[str]:
        """``names`` and the identifiers in the values assigned to them, and so on."""
        found, frontier = set(names), set(names)
        while frontier:
            frontier = {
                i for name in frontier for value in self.values.get(name, ()) for i in _identifiers(value)
            } - found
            found |= frontier
        return found


def _bindings(target: ast.AST, value: ast.expr | None) -> Iterator[tuple[str, ast.expr]]:
    """The names and attributes an assignment binds (``a``, ``self.layer``), each with its value:
    the matching element when a tuple is unpacked from a tuple (``f, g = a, b``), else the whole."""
    if value is None:
        return
    if isinstance(target, ast.Name):
        yield target.id, value
    elif isinstance(target, ast.Attribute):
        yield target.attr, value
    elif isinstance(target, (ast.Tuple, ast.List)):
        pairs = isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts)
        for i, element in enumerate(target.elts):
            yield from _bindings(element, value.elts[i] if pairs else value)  # type: ignore[attr-defined]
    elif isinstance(target, ast.Starred):
        yield from _bindings(target.value, value)


def _identifiers(node: ast.AST) -> Iterator[str]:
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name):
            yield inner.id
        elif isinstance(inner, ast.Attribute):
            yield inner.attr


def _last_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


def _argument(call: ast.Call, position: int, keywords: tuple[str, ...], star: bool) -> list[ast.expr]:
    """The argument at ``position`` or passed as one of ``keywords``; every argument under ``*``."""
    if star:
        return [*call.args, *(k.value for k in call.keywords)]
    found = [k.value for k in call.keywords if k.arg in keywords]
    if position < len(call.args):
        found.append(call.args[position])
    return found


def _region(call: ast.Call, arg: ast.expr, source: str) -> str:
    """The source between ``arg``'s neighbours in ``call``: the argument with the brackets and
    comments libcst counts as part of it."""
    siblings = sorted([*call.args, *call.keywords], key=lambda n: (n.lineno, n.col_offset))
    index = next(i for i, n in enumerate(siblings) if n is arg or (isinstance(n, ast.keyword) and n.value is arg))
    start = siblings[index - 1] if index else call.func
    first, last = start.end_lineno, call.end_lineno  # type: ignore[attr-defined]
    lines = io.StringIO(source, newline="").readlines()[first - 1 : last]  # ast's line ends, no others
    text = "".join(lines).encode("utf-8")  # ast's columns count UTF-8 bytes
    begin = start.end_col_offset  # type: ignore[attr-defined]
    following = siblings[index + 1] if index + 1 < len(siblings) else None
    if following is not None:
        end = sum(len(line.encode("utf-8")) for line in lines[: following.lineno - first]) + following.col_offset
    else:
        end = sum(len(line.encode("utf-8")) for line in lines[: last - first]) + call.end_col_offset  # type: ignore[attr-defined]
    return text[begin:end].decode("utf-8", "replace")
