"""A recorded program re-traced with a larger batch, so that a verdict drawn at a test's tiny shapes is
checked where activations, not fixed-size buffers, dominate peak memory (REM401, discovery.py).

Only the leading dimension of the non-differentiated array inputs grows (the batch of ``x`` and ``y``);
the differentiated ones (the parameters) and dimensions of size 1 stay as recorded. A program that does
not trace at the larger batch (a shape that must match a parameter's) gives no scaled program.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax

from remat_lint.trace.worker import costs
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
        return None


def same_site(scaled: costs.Program, program: costs.Program, site: Site) -> Site | None:
    """``site`` of ``program`` in ``scaled`` (the same trace at other shapes, so the same sites in the same
    order); None when the two programs' checkpoints differ."""
    index = program.sites.index(site)
    if len(scaled.sites) != len(program.sites):
        return None
    twin = scaled.sites[index]
    return twin if twin.location == site.location and len(twin.eqns) == len(site.eqns) else None
