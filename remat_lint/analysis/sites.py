"""Checkpoint sites: every place a remat API is applied, in every spelling.

Forms recognised (``api`` is any of ``apis.REMAT_APIS`` reached through imports and aliases):

    api(f, **kw)                         a call (the call is the site)
    @api / @api(**kw) / @partial(api, **kw)    a decorator (the decorator is the site)
    partial(api, **kw)(f)                a call of a partial
    api(**kw)(f)                         the decorator-factory form (valid for nnx and equinox only)
    r = partial(api, **kw); r(f) / @r    through a name bound once to either of the above
    partial(api, **kw) / api(**kw)       never applied in this module (a decorator exported or
                                         passed on): the call itself, with no target (``api(**kw)``
                                         for nnx and equinox only; elsewhere it raises: REM006)

``jax.checkpoint`` passed as a value (``transform=nn.remat``) is not a site.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal, Sequence

import libcst as cst

from remat_lint.analysis.semantic import Scope, SemanticModel
from remat_lint.analysis.value import Value
from remat_lint.apis import PARTIAL, RematApi, remat_api

# ``Values.entries``: the (key, value) pairs of the dict an expression certainly is, None if unknown.
Entries = Callable[[cst.BaseExpression], "list[tuple[Value | None, cst.BaseExpression]] | None"]


@dataclass(eq=False)
class RematRef:
    """What a callee expression denotes when it denotes a remat transform."""

    api: RematApi
    # Calls that pre-supply arguments, outermost last: functools.partial(...) and api(**kw) factories.
    partials: tuple[cst.Call, ...] = ()
    factory: cst.Call | None = None  # ``api(**kw)`` used as a decorator factory


@dataclass(eq=False)
class RematSite:
    api: RematApi
    node: cst.Call | cst.Decorator  # where findings about the checkpoint point
    form: Literal["call", "decorator"]
    ref: RematRef
    call: cst.Call | None  # the applying call (None for a bare decorator or an unapplied partial)
    target: cst.CSTNode | None  # the checkpointed expression, or the decorated def/class
    keywords: dict[str, cst.Arg]  # every keyword given, partials first (later ones win)
    positional: list[cst.Arg]  # positional arguments after the target
    has_star_args: bool  # ``*args``/``**kwargs`` somewhere: arguments are not fully known
    scope: Scope

    @property
    def argument_calls(self) -> tuple[cst.Call, ...]:
        """Every call whose arguments configure this site, in application order."""
        calls = list(self.ref.partials)
        if self.ref.factory is not None:
            calls.append(self.ref.factory)
        if self.call is not None:
            calls.append(self.call)
        return tuple(calls)

    def keyword(self, name: str) -> cst.Arg | None:
        return self.keywords.get(name)

    def without_argument(self, arg: cst.Arg) -> tuple[cst.Call, cst.Call] | None:
        """The call among ``argument_calls`` that passes ``arg``, and that call without it (the fix
        that deletes a keyword). A new last argument keeps the removed one's trailing comma, if any."""
        call = next((c for c in self.argument_calls if any(a is arg for a in c.args)), None)
        if call is None:
            return None
        args = [a for a in call.args if a is not arg]
        if args and call.args[-1] is arg:
            args[-1] = args[-1].with_changes(comma=arg.comma)
        return call, call.with_changes(args=args)


def resolve_remat(model: SemanticModel, expr: cst.CSTNode, depth: int = 0) -> RematRef | None:
    """The remat transform ``expr`` denotes, through aliases, partials and factory calls."""
    if depth > 8:
        return None
    api = remat_api(model.qualified_name(expr))
    if api is not None:
        return RematRef(api)
    if isinstance(expr, cst.Name):
        value = model.assigned_value(expr)
        return resolve_remat(model, value, depth + 1) if isinstance(value, cst.Call) else None
    if not isinstance(expr, cst.Call):
        return None
    if model.qualified_name(expr.func) in PARTIAL:
        if not expr.args or expr.args[0].keyword is not None or expr.args[0].star:
            return None
        inner = resolve_remat(model, expr.args[0].value, depth + 1)
        if inner is None or inner.factory is not None:
            return None
        return RematRef(inner.api, (*inner.partials, expr))
    inner = resolve_remat(model, expr.func, depth + 1)
    star = any(a.star for a in expr.args)  # ``api(*args)`` may well pass the function
    if inner is not None and inner.factory is None and not star and not _gives_target(expr.args, inner.api):
        # ``api(**kw)``: a decorator factory (an error for jax/flax/haiku: REM006).
        return RematRef(inner.api, inner.partials, expr)
    return None


def _positional(args: Sequence[cst.Arg], skip: int) -> list[cst.Arg]:
    return [a for a in args if a.keyword is None and not a.star][skip:]


def _gives_target(args: Sequence[cst.Arg], api: RematApi) -> bool:
    """Whether a call passes the checkpointed function, positionally or as ``fun=``/``target=``."""
    return bool(_positional(args, 0)) or any(
        a.keyword is not None and a.keyword.value == api.target_param for a in args
    )


def _site(
    model: SemanticModel,
    entries: Entries,
    ref: RematRef,
    node: cst.Call | cst.Decorator,
    call: cst.Call | None,
    decorated: cst.CSTNode | None,
) -> RematSite:
    keywords: dict[str, cst.Arg] = {}
    positional: list[cst.Arg] = []
    star = False
    for i, contributing in enumerate((*ref.partials, ref.factory, call)):
        if contributing is None:
            continue
        args = contributing.args[1:] if i < len(ref.partials) else contributing.args
        for arg in args:
            if arg.star:
                star = True  # still a spread: fixes that edit or count arguments stay away
                if arg.star == "**":
                    keywords.update(_spread_keywords(entries, arg.value))
            elif arg.keyword is not None:
                keywords[arg.keyword.value] = arg
            else:
                positional.append(arg)
    target: cst.CSTNode | None
    if decorated is not None:
        target = decorated
        if positional:  # partial(api, f) used as a decorator: f is the target, the def comes after
            target = positional.pop(0).value
    elif ref.api.target_param in keywords:  # ``jax.checkpoint(fun=f)``
        target = keywords.pop(ref.api.target_param).value
    else:
        target = positional.pop(0).value if positional else None
    form: Literal["call", "decorator"] = "decorator" if decorated is not None else "call"
    return RematSite(ref.api, node, form, ref, call, target, keywords, positional, star, model.scope_of(node))


def _spread_keywords(entries: Entries, value: cst.BaseExpression) -> dict[str, cst.Arg]:
    """The keywords ``**value`` certainly passes: the entries of the dict it is, as the evaluator
    knows them (``**{"policy": p}``, ``**dict(policy=p)``, a name bound once to one that nothing
    changes), when every key is a known string; else none."""
    found = entries(value)
    keywords: dict[str, cst.Arg] = {}
    for key, item in found or ():
        name = key.literal if key is not None and key.kind == "str" else None
        if not isinstance(name, str) or not name.isidentifier():
            return {}
        keywords[name] = cst.Arg(item, keyword=cst.Name(name))
    return keywords


def find_sites(model: SemanticModel, entries: Entries) -> list[RematSite]:
    """Every remat site of the module; ``entries``: the evaluator's ``Values.entries``, for the
    keywords a ``**`` spreads."""
    sites: list[RematSite] = []
    decorator_calls: set[int] = set()
    for owner in (*(info.node for info in model.functions.values()), *model.classes):
        for decorator in getattr(owner, "decorators", ()):
            ref = resolve_remat(model, decorator.decorator)
            if ref is not None:
                sites.append(_site(model, entries, ref, decorator, None, owner))
                if isinstance(decorator.decorator, cst.Call):
                    decorator_calls.add(id(decorator.decorator))
    for call in model.calls:
        if id(call) in decorator_calls:
            continue
        ref = resolve_remat(model, call.func)
        if ref is None:
            continue
        if ref.factory is None and not ref.partials and not _gives_target(call.args, ref.api):
            if not any(a.star for a in call.args):
                continue  # ``api(**kw)`` alone: a factory, its application is the site
        sites.append(_site(model, entries, ref, call, call, None))
    return sites + _unapplied_partials(model, entries, sites)


def _unapplied_partials(model: SemanticModel, entries: Entries, sites: list[RematSite]) -> list[RematSite]:
    """``partial(api, **kw)`` and ``nnx.remat(**kw)`` calls that no site applies: their arguments
    are still checked where they are written (``remat = partial(jax.checkpoint, policy=...)``)."""
    candidates = []
    for call in model.calls:
        if model.qualified_name(call.func) not in PARTIAL:
            api = resolve_remat(model, call.func)
            if api is None or api.factory is not None or not api.api.decorator_factory:
                continue
        ref = resolve_remat(model, call)
        if ref is not None and (ref.factory is None or ref.factory is call):
            candidates.append((call, ref))
    applied = {id(p) for site in sites for p in (*site.ref.partials, site.ref.factory)}
    applied |= {id(p) for _, ref in candidates for p in ref.partials[:-1]}  # partial of a partial
    return [_site(model, entries, ref, call, None, None) for call, ref in candidates if id(call) not in applied]


def missing_target(model: SemanticModel, call: cst.Call) -> RematApi | None:
    """The API when ``call`` gives a remat API (or a partial of one) keywords only although the API
    needs the function first: ``jax.checkpoint(policy=p)`` raises ``TypeError: checkpoint() missing
    1 required positional argument: 'fun'`` (REM006). None for ``nnx.remat`` and
    ``eqx.filter_checkpoint`` (they return a decorator), for unknown keywords (that TypeError comes
    first: REM002) and whenever the function may be supplied (positionally, by name, ``*args``)."""
    ref = resolve_remat(model, call.func)
    if ref is None or ref.factory is not None or ref.api.decorator_factory:
        return None
    for arg in (*(a for p in ref.partials for a in p.args[1:]), *call.args):
        if arg.star or arg.keyword is None or arg.keyword.value not in ref.api.keywords:
            return None  # the function given, maybe given, or an unknown keyword (also ``fun=``)
    return ref.api
