"""Checkpoint sites in a traced program, and which source line each one comes from.

Every call of a checkpointed function is one ``remat2`` equation; the equations that come from the
same checkpoint (the same wrapped function, policy and ``prevent_cse``, e.g. one per layer) form a
``Site``. A site is located in the user's source by three anchors: the wrapped function's first line
(its decorator, ``def`` or ``lambda``, from the jaxpr's debug info), the lines that call it (the
equation's traceback), and, for framework wrappers (``nn.remat``, ``hk.remat``…) whose wrapped
function lives in the framework, the user frame that traced the body (``Block.__call__``).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
from jax._src import core, source_info_util

from remat_lint.trace.worker.jaxpr_rewrite import OPAQUE, is_checkpoint, walk
from remat_lint.trace.worker.wrap_bindings import bound_calls

Loc = tuple[str, int]  # (file, line)
_SRC_INFO = re.compile(r"^(?P<name>.*) at (?P<file>.+):(?P<line>\d+)$")
_cp = jax.checkpoint_policies
POLICY_NAMES = {
    id(_cp.nothing_saveable): "nothing_saveable",
    id(_cp.everything_saveable): "everything_saveable",
    id(_cp.dots_saveable): "dots_saveable",
    id(_cp.dots_with_no_batch_dims_saveable): "dots_with_no_batch_dims_saveable",
}
POLICIES = {
    "nothing_saveable": _cp.nothing_saveable,
    "dots_with_no_batch_dims_saveable": _cp.dots_with_no_batch_dims_saveable,
    "dots_saveable": _cp.dots_saveable,
    "everything_saveable": _cp.everything_saveable,
}


def policy_name(policy: Any) -> str:
    if policy is None:
        return "nothing_saveable (default)"
    return POLICY_NAMES.get(id(policy)) or getattr(policy, "__qualname__", None) or repr(policy)


def is_user_file(path: str) -> bool:
    """A file of the user's project: not JAX, the standard library or an installed package."""
    parts = Path(path).parts
    return source_info_util.is_user_filename(path) and "site-packages" not in parts and "dist-packages" not in parts


def user_frames(eqn: core.JaxprEqn) -> list[Loc]:
    frames = source_info_util.user_frames(eqn.source_info.traceback)
    return [(f.file_name, f.start_line) for f in frames if is_user_file(f.file_name)]


@dataclass
class Site:
    eqns: list[core.JaxprEqn]
    path: tuple[str, ...]  # primitives enclosing the first equation (scan, pjit, remat2…)
    function: str  # the wrapped function's name (for framework wrappers: the body's, ``Block.__call__``)
    definition: Loc | None  # the wrapped function's first line, when it is in the user's code
    body: Loc | None  # the outermost user frame that traced the body, outside the call stack
    calls: list[Loc] = field(default_factory=list)  # every user frame of every call
    # the line of the wrap its calls go through (``lean = jax.checkpoint(f, policy=P)``; ``attribute``),
    # None when the calls do not say
    wrap: int | None = None

    @property
    def params(self) -> dict[str, Any]:
        return self.eqns[0].params

    @property
    def policy(self) -> str:
        return policy_name(self.params["policy"])

    @property
    def prevent_cse(self) -> bool:
        pc = self.params["prevent_cse"]
        return any(pc) if isinstance(pc, tuple) else bool(pc)

    @property
    def opaque(self) -> bool:
        """Inside a custom derivative rule: it cannot be rewritten."""
        return any(p in OPAQUE for p in self.path)

    @property
    def location(self) -> Loc | None:
        """Best line without the source: the wrapped function, else its body, else its first call."""
        return self.definition or self.body or (self.calls[0] if self.calls else None)


def find_sites(jaxpr: core.Jaxpr) -> list[Site]:
    """The program's checkpoint sites in trace order, equations of the same checkpoint grouped."""
    groups: dict[tuple[Any, ...], Site] = {}
    for eqn, path in walk(jaxpr):
        if not is_checkpoint(eqn):
            continue
        info = eqn.params["jaxpr"].debug_info
        m = _SRC_INFO.match(info.func_src_info or "") if info else None
        definition = (m["file"], int(m["line"])) if m and is_user_file(m["file"]) else None
        calls = user_frames(eqn)
        body, body_function = (None, None) if definition else _body_frame(eqn, set(calls))
        key = (
            info.func_src_info if definition else body,
            repr(eqn.params["policy"]),
            str(eqn.params["prevent_cse"]),
            path,
        )
        site = groups.get(key)
        if site is None:
            name = body_function or (m["name"] if m else "?")
            groups[key] = Site([eqn], path, name, definition, body, calls)
        elif all(e is not eqn for e in site.eqns):  # a sub-jaxpr may be shared by two callers
            site.eqns.append(eqn)
            site.calls.extend(c for c in calls if c not in site.calls)
    return list(groups.values())


def _body_frame(eqn: core.JaxprEqn, call_stack: set[Loc]) -> tuple[Loc | None, str | None]:
    return body_frame(eqn.params["jaxpr"], call_stack)


def body_frame(body: core.Jaxpr, call_stack: set[Loc]) -> tuple[Loc | None, str | None]:
    """Where a framework-wrapped body was traced (``Block.__call__``), and that function's name."""
    for inner, _ in walk(body):
        frames = [
            f
            for f in source_info_util.user_frames(inner.source_info.traceback)
            if is_user_file(f.file_name) and (f.file_name, f.start_line) not in call_stack
        ]
        if frames:
            return (frames[-1].file_name, frames[-1].start_line), frames[-1].function_name
    return None, None


# --- matching a static finding's line to sites ------------------------------------------------


@dataclass(frozen=True)
class Target:
    """What the code at a finding's line checkpoints: the line and the spans of the functions or
    classes it names (a decorated ``def``, ``jax.checkpoint(layer)``, ``nn.remat(Block)``, a lambda)."""

    line: int
    spans: tuple[tuple[int, int], ...]
    names: tuple[str, ...]
    keywords: tuple[tuple[str, Any], ...] = ()  # literal prevent_cse= / named policy= written there

    def agrees(self, site: Site) -> bool:
        """The site's params do not contradict the keywords written at the line."""
        kw = dict(self.keywords)
        if "prevent_cse" in kw and kw["prevent_cse"] != site.prevent_cse:
            return False
        return "policy" not in kw or site.policy.split(" ")[0] == kw["policy"]


@functools.lru_cache(maxsize=256)
def target_at(code: str, line: int) -> Target:
    tree = ast.parse(code)
    defs: dict[str, list[tuple[int, int]]] = {}
    spans: list[tuple[int, int]] = []
    decorated: list[str] = []  # their span is the one decorated, not another definition of the name
    named: list[str] = []  # passed by name (``jax.checkpoint(layer)``): any definition of it may be the one
    keywords: list[tuple[str, Any]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            defs.setdefault(node.name, []).append((start, node.end_lineno or node.lineno))
            if start <= line <= node.lineno:  # the finding is on its decorator or def line
                spans.append((start, node.end_lineno or node.lineno))
                decorated.append(node.name)
        elif isinstance(node, ast.Call) and node.lineno == line:
            keywords += _remat_keywords(node)
            if not node.args:
                continue
            first = node.args[0]
            if isinstance(first, ast.Lambda):
                spans.append((first.lineno, first.end_lineno or first.lineno))
            elif isinstance(first, (ast.Name, ast.Attribute)):
                named.append(first.id if isinstance(first, ast.Name) else first.attr)
    for name in named:
        spans.extend(defs.get(name, []))
    return Target(line, tuple(spans), tuple(decorated + named), tuple(keywords))


def _remat_keywords(call: ast.Call) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for kw in call.keywords:
        value = kw.value
        if kw.arg == "prevent_cse" and isinstance(value, ast.Constant) and isinstance(value.value, bool):
            out.append(("prevent_cse", value.value))
        elif kw.arg == "policy" and isinstance(value, ast.Attribute) and value.attr in POLICIES:
            out.append(("policy", value.attr))
        elif kw.arg == "policy" and isinstance(value, ast.Constant) and value.value is None:
            out.append(("policy", "nothing_saveable"))
        elif kw.arg == "policy" and isinstance(value, ast.Constant) and isinstance(value.value, str):
            out.append(("policy", repr(value.value)))  # REM001's string policy, as policy_name shows it
    return out


@functools.lru_cache(maxsize=64)
def _file_text(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _in_file(loc: Loc | None, code: str) -> bool:
    return loc is not None and (_file_text(loc[0]) or "").replace("\r\n", "\n") == code.replace("\r\n", "\n")


def match_score(site: Site, code: str, target: Target) -> int:
    """How surely ``site`` is the checkpoint written at ``target.line`` (0: it is not)."""
    if any(c[1] == target.line and _in_file(c, code) for c in site.calls):
        return 5  # checkpoint applied and called on that line: jax.checkpoint(f)(x)
    if site.wrap is not None:  # its calls name their wrap: no other wrap of the same function is it
        return 4 if site.wrap == target.line else 0
    return _anchor_score(site, code, target)


def _anchor_score(site: Site, code: str, target: Target) -> int:
    """How surely the code at ``target.line`` wraps ``site``'s function or body (0: it does not)."""

    def inside(loc: Loc | None) -> bool:
        return loc is not None and _in_file(loc, code) and any(a <= loc[1] <= b for a, b in target.spans)

    if site.definition and site.definition[1] == target.line and _in_file(site.definition, code):
        return 3  # a decorator or lambda on that line
    if inside(site.definition):
        return 2  # jax.checkpoint(layer) with layer defined in this file
    if inside(site.body):
        return 1  # nn.remat(Block): the body was traced in Block
    return 0


def attribute(sites: Sequence[Site], code: str) -> list[Site]:
    """``sites`` cut by the wrap each equation's call goes through (wrap_bindings.py), each piece's
    ``wrap`` set: two wraps of one function with one policy (``nn.remat(Block)`` applied twice) make
    one ``find_sites`` site, yet are two checkpoints of the source. A site whose calls say nothing stays."""
    out: list[Site] = []
    for site in sites:
        groups: dict[int | None, list[core.JaxprEqn]] = {}
        for eqn in site.eqns:
            groups.setdefault(_wrap_of(site, eqn, code), []).append(eqn)
        if list(groups) == [None]:
            out.append(site)
            continue
        for wrap, eqns in groups.items():
            calls = list(dict.fromkeys(loc for eqn in eqns for loc in user_frames(eqn)))
            out.append(dataclasses.replace(site, eqns=eqns, calls=calls, wrap=wrap))
    return out


def _wrap_of(site: Site, eqn: core.JaxprEqn, code: str) -> int | None:
    """The line of the one wrap of ``site``'s function or body that the innermost call of ``eqn`` in
    ``code`` (the call of the checkpointed function; outer ones call what contains it, ``step =
    jax.jit(train_step)``) is bound to; None when that call does not say, or says two."""
    for frame in source_info_util.user_frames(eqn.source_info.traceback):  # innermost first
        if _in_file((frame.file_name, frame.start_line), code):
            span = (frame.start_line, frame.start_column, frame.end_line, frame.end_column)
            wraps = [line for line in bound_calls(code, span) if _anchor_score(site, code, target_at(code, line))]
            return wraps[0] if len(wraps) == 1 else None
    return None


def calls_at(sites: Sequence[Site], code: str, span: tuple[int, int, int, int]) -> list[Site]:
    """The sites restricted to the equations called by the expression at ``span`` (line, column,
    end line, end column; columns 0-based): ``rb(rb(x, w1), w2)`` flags the outer call only. Sites
    unchanged when no equation is called from exactly there (a decorator or a wrapped definition)."""

    def called_there(eqn: core.JaxprEqn) -> bool:
        frames = source_info_util.user_frames(eqn.source_info.traceback)
        return any(
            (f.start_line, f.start_column, f.end_line, f.end_column) == span
            and _in_file((f.file_name, f.start_line), code)
            for f in frames
        )

    narrowed = [dataclasses.replace(s, eqns=[e for e in s.eqns if called_there(e)]) for s in sites]
    narrowed = [s for s in narrowed if s.eqns]
    return narrowed or list(sites)


def best_lines(site: Site, code: str, targets: Sequence[Target]) -> list[int]:
    """The lines of the ``targets`` (static sites) that ``site`` matches best; several when two wraps
    of one function tie and the calls do not say which (``attribute``), none when none matches."""
    scored = [(match_score(site, code, t), t.line) for t in targets if t.agrees(site)]
    best = max((score for score, _ in scored), default=0)
    return [line for score, line in scored if score == best] if best else []


def sites_at(sites: Sequence[Site], code: str, line: int) -> list[Site]:
    """The sites the checkpoint at ``line`` of ``code`` produced (the best-matching ones)."""
    target = target_at(code, line)
    sites = attribute(sites, code)
    sites = [s for s in sites if target.agrees(s)] or list(sites)
    scored = [(match_score(s, code, target), s) for s in sites]
    best = max((score for score, _ in scored), default=0)
    return [s for score, s in scored if score == best and best > 0]


def display_path(loc: Loc | None) -> tuple[str | None, int | None]:
    if loc is None:
        return None, None
    path = loc[0]
    try:
        path = os.path.relpath(path)
    except ValueError:
        pass
    return path, loc[1]
