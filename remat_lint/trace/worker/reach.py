"""Whether a traced run went through a finding's checkpoint: the object the finding is about.

A verdict is drawn only from a trace that passed the flagged site (a plain call of the function a
checkpoint wraps is no evidence about the checkpoint). Three places show it:

- the forward jaxpr: a checkpoint equation that ``jaxpr_sites`` matches to the finding's line;
- an exception's traceback: a ``jax.checkpoint`` wrapper frame (``fun_remat``) whose wrapped
  function or traced body is the one written at the finding's line, or the finding's own line
  raising below such a frame;
- the line recorder: the finding's lines executed while a checkpoint wrapper was on the stack.

Every framework wrapper (``nn.remat``, ``nnx.remat``, ``hk.remat``, ``eqx.filter_checkpoint``) goes
through ``jax.checkpoint``'s ``fun_remat`` (``_remat3`` under ``jax_remat3``) in jax 0.10.2. Tracebacks need
``jax_traceback_filtering=off``, which the worker sets: JAX otherwise cuts its own frames.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Sequence
from dataclasses import dataclass
from types import FrameType, TracebackType
from typing import Any

from jax._src import core

from remat_lint.trace.worker.jaxpr_sites import (
    Loc,
    Site,
    attribute,
    body_frame,
    is_user_file,
    match_score,
    policy_name,
    target_at,
)

_REMAT_FILE = os.path.join("jax", "_src", "ad_checkpoint.py")


_WRAPPERS = {"fun_remat": "fun", "_remat3": "f"}  # jax.checkpoint's wrapper (under jax_remat3: _remat3) -> its function


def is_checkpoint_frame(frame: FrameType) -> bool:
    """The frame of a function ``jax.checkpoint`` returned, while it traces or binds its body."""
    code = frame.f_code
    return code.co_name in _WRAPPERS and code.co_filename.endswith(_REMAT_FILE)


def stack(frame: FrameType | None) -> list[tuple[FrameType, int]]:
    """The Python stack ending at ``frame``, outermost first, each frame with its current line."""
    frames = []
    while frame is not None:
        frames.append((frame, frame.f_lineno))
        frame = frame.f_back
    return frames[::-1]


@dataclass(frozen=True)
class FrameSite:
    """A checkpoint seen on a Python stack; matched to source as ``jaxpr_sites.Site`` is."""

    definition: Loc | None  # the wrapped function's first line, when it is user code
    body: Loc | None  # the first user frame inside the wrapper (``Block.__call__`` for nn.remat)
    calls: tuple[Loc, ...]  # the user frames that called the wrapper
    policy: str
    prevent_cse: bool
    # ``jaxpr_sites.Site.wrap``: a stack has no call positions to name it by, but a replayed checkpoint call
    # knows the wrap it was recorded through (``evidence.Run.wrap``)
    wrap: int | None = None


def frame_sites(frames: Sequence[tuple[FrameType, int]]) -> list[FrameSite]:
    """The checkpoint wrappers among ``frames`` (outermost first, each with its current line)."""
    found = []
    for i, (frame, _) in enumerate(frames):
        if not is_checkpoint_frame(frame):
            continue
        local = frame.f_locals
        calls = tuple((f.f_code.co_filename, n) for f, n in frames[:i] if is_user_file(f.f_code.co_filename))
        inner = [(f.f_code.co_filename, n) for f, n in frames[i + 1 :] if is_user_file(f.f_code.co_filename)]
        body = inner[0] if inner else None
        traced = local.get("jaxpr")  # raised after the body was traced (under grad): its equations say where
        if body is None and isinstance(traced, core.Jaxpr):
            body, _ = body_frame(traced, set(calls))
        prevent_cse = local.get("prevent_cse", True)
        found.append(
            FrameSite(
                _definition(local.get(_WRAPPERS[frame.f_code.co_name])),
                body,
                calls,
                policy_name(local.get("policy")),
                any(prevent_cse) if isinstance(prevent_cse, tuple) else bool(prevent_cse),
            )
        )
    return found


def traceback_frames(tb: TracebackType | None) -> list[tuple[FrameType, int]]:
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    return frames


def _definition(fun: Any) -> Loc | None:
    """Where the wrapped function starts, as JAX's ``fun_sourceinfo`` finds it; a class's ``class``
    line (``jax.checkpoint(Block)`` on a Flax Module class, REM009)."""
    try:
        fun = inspect.unwrap(fun)
        while isinstance(fun, functools.partial):
            fun = fun.func
        if inspect.isclass(fun):
            file, line = inspect.getsourcefile(fun), inspect.getsourcelines(fun)[1]
        else:
            file, line = fun.__code__.co_filename, fun.__code__.co_firstlineno
    except (AttributeError, ValueError, TypeError, OSError):
        return None
    return (file, line) if file and is_user_file(file) else None


def matches_site(sites: Sequence[Any], code: str, line: int) -> bool:
    """Whether one of ``sites`` (``Site`` or ``FrameSite``) is the checkpoint written at ``line``."""
    target = target_at(code, line)
    attributed = [
        *attribute([s for s in sites if isinstance(s, Site)], code),
        *(s for s in sites if not isinstance(s, Site)),
    ]
    return any(target.agrees(s) and match_score(s, code, target) > 0 for s in attributed)
