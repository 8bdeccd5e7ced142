"""A recorded program re-traced with a larger batch, so that a verdict drawn at a test's tiny shapes is
checked where activations, not fixed-size buffers, dominate peak memory (REM401, discovery.py).

Only the leading dimension of the non-differentiated array inputs grows (the batch of ``x`` and ``y``);
the differentiated ones (the parameters) and dimensions of size 1 stay as recorded. A ``jax.vjp``
differentiates every input, its batch included, and its cotangent (non-differentiated) must grow with
it: when growing the cotangent alone does not trace, it grows together with one
differentiated input at a time, and the first that traces is the batch (growing the parameters
breaks their products). A program that does not trace at the larger batch gives no scaled program.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax

from remat_lint.trace.worker import costs
from remat_lint.trace.worker.build import COTANGENT
from remat_lint.trace.worker.jaxpr_sites import Site

FACTOR = 16  # how many times the recorded batch; see rules/rem401_checkpoint_saves_no_memory.py


def scaled_inputs(kwargs: dict[str, Any], factor: int) -> dict[str, Any] | None:
    """``kwargs`` (the non-differentiated inputs) with the leading dimension of every array times
    ``factor``; None when no array has a leading dimension above 1 (nothing would grow)."""
    grown = False

    def scale(leaf: Any) -> Any:
        nonlocal grown
        shape = getattr(leaf, "shape", ())
        if not isinstance(leaf, jax.ShapeDtypeStruct) or not shape or shape[0] <= 1:
            return leaf
        grown = True
        return jax.ShapeDtypeStruct((shape[0] * factor, *shape[1:]), leaf.dtype)

    out = jax.tree_util.tree_map(scale, kwargs)
    return out if grown else None


def scaled_program(
    fun: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], argnums: Sequence[int], factor: int = FACTOR
) -> costs.Program | None:
    """The program of ``fun`` traced at ``factor`` times the batch; None when nothing grows or the
    program does not trace at that batch."""
    inputs = scaled_inputs(kwargs, factor)
    if inputs is None:
        return None
    try:
        return costs.Program.trace(fun, args, inputs, argnums)
    except Exception:  # user code at a shape it was never run with: no scaled program, no verdict
        pass
    if COTANGENT not in kwargs:  # a grad's parameters are differentiated, its batch is not
        return None
    for i, arg in enumerate(args):  # a vjp's batch is among the differentiated inputs
        grown = scaled_inputs({"arg": arg}, factor)
        if grown is None:
            continue
        try:
            return costs.Program.trace(fun, (*args[:i], grown["arg"], *args[i + 1 :]), inputs, argnums)
        except Exception:
            continue
    return None


def same_site(scaled: Sequence[Site], sites: Sequence[Site], site: Site) -> Site | None:
    """``site`` of ``sites`` among ``scaled``, the sites of the same trace at other shapes (so the same
    sites in the same order, both cut alike by ``jaxpr_sites.attribute``); None when the two programs'
    checkpoints differ."""
    index = [id(s) for s in sites].index(id(site))
    if len(scaled) != len(sites):
        return None
    twin = scaled[index]
    same = twin.location == site.location and twin.wrap == site.wrap and len(twin.eqns) == len(site.eqns)
    return twin if same else None
