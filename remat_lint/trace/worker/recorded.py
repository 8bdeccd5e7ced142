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
    label: str = ""  # the name to show when ``fun`` is a framework's closure over the project's function

    @property
    def name(self) -> str:
        return self.label or qualified_name(self.fun)


def qualified_name(fun: Any) -> str:
    return getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None) or type(fun).__name__
