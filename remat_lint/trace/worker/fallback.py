"""Worker side: the shapes a declared target's failed build called the flagged functions with.

A declared target that cannot be built (a Flax Module whose ``__call__`` raises a
``TracerBoolConversionError`` at ``init``) is no evidence about a finding elsewhere in the module.
The functions that own such a finding may still have run before the build failed: their first
call's arguments, made abstract on the spot, are shapes the project's own model gave them, not
guesses. The worker then traces each of them alone at those shapes (a fallback: it confirms, never
refutes, as a checkpointed function differentiated alone cannot).

A finding inside a Flax Module class (``RematBlock = nn.remat(Block, policy=...)``, an NNX
``__call__`` under ``@nnx.remat``) is met the same way one level up: the first call of each such
Module's methods is recorded with a copy of the instance that stands alone (a linen Module unbound,
with the attributes the model constructed it with; an NNX Module as its graph and abstract state),
and that Module, with its own checkpoint wrapper, is built and applied alone through that method
at the shapes of the call. Every public method and ``__call__`` is watched, as a checkpoint may sit
on any of them (``nn.remat(Block, methods=["encode"])``); a call made inside another watched call
of the same instance is left to the outer one, which runs it.
"""

from __future__ import annotations

import functools
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


@dataclass
class ModuleCalled:
    """A Flax Module's first call during a build: a copy of the instance that stands alone (its
    attributes, or its NNX graph and state) and the call's arguments, abstract."""

    name: str  # the module-level name of its class: ``RematBlock``
    module: Any  # linen: an unbound clone; NNX: ``nnx.split(instance, nnx.Param, ...)``, abstract
    args: list[Any]
    kwargs: dict[str, Any]
    rngs: list[str]  # linen: the PRNG streams its scope had (``params``, ``dropout``)
    nnx: bool = False
    method: str = "__call__"  # the method called: ``encode``

    @property
    def label(self) -> str:
        return _label(self.name, self.method)


def _label(name: str, method: str) -> str:
    """``RematBlock``, or ``RematBlock.encode`` for a method other than ``__call__``."""
    return name if method == "__call__" else f"{name}.{method}"


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


def module_classes(candidates: dict[str, Any]) -> dict[str, type]:
    """The Flax Module classes (linen and NNX) among ``candidates``, each class once (its first name)."""
    try:
        from flax import linen, nnx
    except ImportError:
        return {}
    found: dict[str, type] = {}
    for name, value in candidates.items():
        if isinstance(value, type) and issubclass(value, (linen.Module, nnx.Module)) and value not in found.values():
            found[name] = value
    return found


@contextmanager
def first_module_calls(classes: dict[str, type]) -> Iterator[dict[str, ModuleCalled]]:
    """Record the first call of each method of an instance of each of ``classes`` (exactly that
    class: not a subclass that inherits the method) while the block runs, by wrapping the methods;
    keyed by ``ModuleCalled.label``."""
    found: dict[str, ModuleCalled] = {}
    running: set[int] = set()  # ids of the instances inside a watched call
    wrapped = [(cls, method, cls.__dict__.get(method)) for cls in classes.values() for method in _entry_methods(cls)]
    for name, cls in classes.items():
        for method in _entry_methods(cls):
            setattr(cls, method, _recording(name, cls, method, getattr(cls, method), found, running))
    try:
        yield found
    finally:
        for cls, method, own in wrapped:
            if own is None:
                delattr(cls, method)
            else:
                setattr(cls, method, own)


def _entry_methods(cls: type) -> list[str]:
    """The methods of ``cls`` that the user's classes define (not Flax's own): ``__call__`` and the
    public ones but ``setup``."""
    names: set[str] = set()
    for base in cls.__mro__:
        if base.__module__.split(".")[0] not in ("flax", "builtins"):
            names |= {
                name
                for name, value in vars(base).items()
                if inspect.isfunction(value) and (name == "__call__" or not name.startswith("_") and name != "setup")
            }
    return sorted(names)


def _recording(
    name: str, cls: type, method: str, bound: Callable[..., Any], found: dict[str, ModuleCalled], running: set[int]
) -> Callable[..., Any]:
    label = _label(name, method)

    @functools.wraps(bound)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        exact = type(self) is cls  # not ``if type(self) is cls``: mypy would narrow self to a bare type
        if exact and label not in found and id(self) not in running:
            try:
                found[label] = _module_called(name, self, args, kwargs, method)
            except Exception:  # recording must never change how the user's build runs or fails
                pass
        outer = id(self) not in running
        running.add(id(self))
        try:
            return bound(self, *args, **kwargs)
        finally:
            if outer:
                running.discard(id(self))

    return call


def _module_called(
    name: str, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any], method: str
) -> ModuleCalled:
    abstract_args = [_abstract(a) for a in args]
    abstract_kwargs = {k: _abstract(v) for k, v in kwargs.items()}
    from flax import nnx

    if isinstance(instance, nnx.Module):  # its graph, its parameters, its other state (RNG counts...)
        graphdef, params, *rest = nnx.split(instance, nnx.Param, ...)
        state = (graphdef, _abstract(params), _abstract(rest[0]))
        return ModuleCalled(name, state, abstract_args, abstract_kwargs, [], nnx=True, method=method)
    scope = getattr(instance, "scope", None)
    return ModuleCalled(
        name,
        instance.clone(parent=None, name=None),  # unbound, with the attributes it was constructed with
        abstract_args,
        abstract_kwargs,
        sorted({"params", *(getattr(scope, "rngs", None) or {})}),
        method=method,
    )
