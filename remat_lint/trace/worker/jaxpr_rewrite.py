"""Re-trace a program's jaxpr with some checkpoint equations rewritten, without touching user source.

A checkpoint (``jax.checkpoint``, ``nn.remat``, ``hk.remat``…) is one ``remat2`` equation whose
params are ``jaxpr``, ``prevent_cse``, ``differentiated`` and ``policy``. ``rewrite`` evaluates the
traced program equation by equation (as ``jax.core.eval_jaxpr`` does) under a fresh trace, replacing
each selected equation by an ``Edit``: inlined (the checkpoint removed) or re-bound with other params.
Selected equations nested in ``scan``/``while``/``cond``/``pjit``/another checkpoint are reached by
re-tracing the enclosing sub-jaxprs; inside ``custom_jvp``/``custom_vjp`` (whose rules are user
callables we cannot rewrite) they raise ``Unsupported``.

Uses JAX internals (``jax._src``), measured on jax 0.10.2.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
from jax._src import core, source_info_util
from jax._src import linear_util as lu
from jax._src.ad_checkpoint import remat_p
from jax._src.interpreters import partial_eval as pe

OPAQUE = ("custom_jvp_call", "custom_vjp_call", "custom_vjp_call_jaxpr", "custom_lin")


class Unsupported(Exception):
    """The program's structure does not allow the requested rewrite."""


@dataclass(frozen=True)
class Edit:
    inline: bool = False  # drop the checkpoint: evaluate its body in place
    params: dict[str, Any] = field(default_factory=dict)  # policy / prevent_cse overrides
    scope: str | None = None  # a name-stack scope, to recognise the site's equations later


EditFor = Callable[[core.JaxprEqn], "Edit | None"]


def is_checkpoint(eqn: core.JaxprEqn) -> bool:
    return eqn.primitive is remat_p


def sub_jaxprs(params: dict[str, Any]) -> Iterator[core.Jaxpr]:
    yield from core.jaxprs_in_params(params)


def walk(jaxpr: core.Jaxpr, path: tuple[str, ...] = ()) -> Iterator[tuple[core.JaxprEqn, tuple[str, ...]]]:
    """Every equation, nested ones included, with the primitive names enclosing it."""
    for eqn in jaxpr.eqns:
        yield eqn, path
        for sub in sub_jaxprs(eqn.params):
            yield from walk(sub, path + (eqn.primitive.name,))


def rewrite(closed: core.ClosedJaxpr, edit_for: EditFor) -> core.ClosedJaxpr:
    """``closed`` re-traced with every equation ``edit_for`` selects rewritten."""
    return _Rewriter(edit_for).retrace(closed)


class _Rewriter:
    def __init__(self, edit_for: EditFor) -> None:
        self.edit_for = edit_for
        self._contains: dict[int, bool] = {}

    def contains(self, jaxpr: core.Jaxpr) -> bool:
        """Whether an equation to rewrite lies in ``jaxpr`` (at any depth)."""
        key = id(jaxpr)
        if key not in self._contains:
            self._contains[key] = any(
                self.edit_for(e) is not None or any(self.contains(s) for s in sub_jaxprs(e.params)) for e in jaxpr.eqns
            )
        return self._contains[key]

    def retrace(self, closed: core.ClosedJaxpr) -> core.ClosedJaxpr:
        jaxpr, consts = self._trace(closed.jaxpr, closed.consts)
        return core.ClosedJaxpr(jaxpr, consts)

    def _trace(self, jaxpr: core.Jaxpr, consts: Sequence[Any]) -> tuple[core.Jaxpr, list[Any]]:
        def run(*args: Any) -> list[Any]:
            return self.evaluate(jaxpr, consts, args)

        fun = lu.wrap_init(run, debug_info=jaxpr.debug_info)
        new, _, new_consts = pe.trace_to_jaxpr_dynamic(fun, [v.aval for v in jaxpr.invars])
        return new, list(new_consts)

    def _retrace_param(self, value: Any) -> Any:
        if isinstance(value, tuple):
            return tuple(self._retrace_param(v) for v in value)
        if isinstance(value, core.ClosedJaxpr) and self.contains(value.jaxpr):
            return self.retrace(value)
        if isinstance(value, core.Jaxpr) and self.contains(value):
            new, consts = self._trace(value, [])
            if consts:
                raise Unsupported("a rewritten sub-program captured constants")
            return new
        return value

    def evaluate(self, jaxpr: core.Jaxpr, consts: Sequence[Any], args: Sequence[Any]) -> list[Any]:
        env: dict[core.Var, Any] = {}

        def read(v: Any) -> Any:
            return v.val if isinstance(v, core.Literal) else env[v]

        env.update(zip(jaxpr.constvars, consts, strict=True))
        env.update(zip(jaxpr.invars, args, strict=True))
        for eqn in jaxpr.eqns:
            edit = self.edit_for(eqn)
            nested = any(self.contains(s) for s in sub_jaxprs(eqn.params))
            if nested and eqn.primitive.name in OPAQUE:
                raise Unsupported(f"checkpoint inside {eqn.primitive.name} (a custom derivative rule)")
            invals = [read(v) for v in eqn.invars]
            name_stack = source_info_util.current_name_stack() + eqn.source_info.name_stack
            with source_info_util.user_context(eqn.source_info.traceback, name_stack=name_stack), eqn.ctx.manager:
                if edit is not None:
                    outs = self._apply(eqn, edit, invals)
                else:
                    params = {k: self._retrace_param(v) for k, v in eqn.params.items()} if nested else eqn.params
                    ans = eqn.primitive.bind(*invals, **eqn.primitive.get_bind_params(params))
                    outs = ans if eqn.primitive.multiple_results else [ans]
            env.update(zip(eqn.outvars, outs, strict=True))
        return [read(v) for v in jaxpr.outvars]

    def _apply(self, eqn: core.JaxprEqn, edit: Edit, invals: list[Any]) -> list[Any]:
        if not is_checkpoint(eqn):
            raise Unsupported(f"cannot rewrite a {eqn.primitive.name} equation")
        scope = jax.named_scope(edit.scope) if edit.scope else contextlib.nullcontext()
        with scope:
            if edit.inline:
                return self.evaluate(eqn.params["jaxpr"], [], invals)
            params = {**eqn.params, **edit.params}
            body, consts = eqn.params["jaxpr"], list[Any]()
            if self.contains(body):
                body, consts = self._trace(body, [])
                body = pe.convert_constvars_jaxpr(body)
            params["jaxpr"] = body
            if isinstance(params["prevent_cse"], tuple):
                params["prevent_cse"] = (False,) * len(consts) + params["prevent_cse"]
            outs: list[Any] = remat_p.bind(*consts, *invals, **params)
            return outs
