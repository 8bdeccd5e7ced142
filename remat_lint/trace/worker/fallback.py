"""Worker side: the shapes a declared target's failed build called the flagged functions with.

A declared target that cannot be built (a Flax Module whose ``__call__`` raises a
``TracerBoolConversionError`` at ``init``) is no evidence about a finding elsewhere in the module.
The functions that own such a finding may still have run before the build failed: their first
call's arguments, made abstract on the spot, are shapes the project's own model gave them, not
guesses. The worker then traces each of them alone at those shapes (a fallback: it confirms, never
refutes, as a checkpointed function differentiated alone cannot).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any

import jax

SOURCE = "failed build"  # Prepared.source of a fallback run


@dataclass
class Called:
    """A module-level function's first call during a build, its arguments abstract."""

    name: str
    args: list[Any]
    kwargs: dict[str, Any] = field(default_factory=dict)


@contextmanager
def first_calls(functions: dict[str, Callable[..., Any]]) -> Iterator[dict[str, Called]]:
    """Record the first call of each of ``functions`` (by name) while the block runs. The trace
    function already installed (the worker's line recorder) keeps receiving every event."""
    codes: dict[CodeType, str] = {}
    for name, fun in functions.items():
        code = getattr(inspect.unwrap(fun), "__code__", None)  # through jax.checkpoint's functools.wraps
        if code is not None:
            codes[code] = name
    found: dict[str, Called] = {}
    previous = sys.gettrace()

    def tracer(frame: FrameType, event: Any, arg: Any) -> Any:  # event: a Literal typeshed keeps private
        name = codes.get(frame.f_code)
        if event == "call" and name is not None and name not in found:
            found[name] = _called(name, frame)
        return previous(frame, event, arg) if previous is not None else None

    sys.settrace(tracer)
    try:
        yield found
    finally:
        sys.settrace(previous)


def _called(name: str, frame: FrameType) -> Called:
    info = inspect.getargvalues(frame)
    args = [_abstract(info.locals[a]) for a in info.args]
    kwargs = {k: _abstract(v) for k, v in (info.locals.get(info.keywords) or {}).items()} if info.keywords else {}
    return Called(name, args, kwargs)


def _abstract(value: Any) -> Any:
    """Arrays and tracers (also inside pytrees) become ``ShapeDtypeStruct``; other values stay."""

    def leaf(x: Any) -> Any:
        if isinstance(x, (jax.Array, jax.core.Tracer)):
            return jax.ShapeDtypeStruct(x.shape, x.dtype)
        return x

    try:
        return jax.tree_util.tree_map(leaf, value)
    except Exception:  # a value JAX cannot flatten: passed as it is
        return value
