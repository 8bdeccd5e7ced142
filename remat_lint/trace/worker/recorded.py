"""A call the ``--trace-run`` recorder saw (recorder.py), as the worker replays it (build.py, session.py).
Kept apart from the recorder, which runs the session at exit, so the two never import each other."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class Recorded:
    """A differentiated call as the run made it, abstract."""

    fun: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    argnums: tuple[int, ...] | None  # None: the floating-point arguments
    has_aux: bool
    transform: str  # grad, value_and_grad, vjp, checkpoint call
    observed: str = ""  # the pytest test that made the call (PYTEST_CURRENT_TEST), "" outside pytest

    @property
    def name(self) -> str:
        return getattr(self.fun, "__qualname__", None) or getattr(self.fun, "__name__", None) or type(self.fun).__name__
