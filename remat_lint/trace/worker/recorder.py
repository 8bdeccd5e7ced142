"""``--trace-run CMD``: shapes from the project's own run. Imported by a ``sitecustomize`` the driver
puts on ``PYTHONPATH`` of the user's command (its tests, a training step), this module wraps JAX's
differentiation entry points (``jax.grad``, ``jax.value_and_grad``, ``jax.vjp``, which Equinox
calls; Flax NNX's ``nnx.grad``/``nnx.value_and_grad`` over their Modules' state) so that each differentiated function is recorded with the abstract
signature it was called at (``ShapeDtypeStruct`` pytrees for arrays and tracers, other values as
they are). When the command exits, the findings of every requested module are judged in that same
process against the recorded functions, each differentiated as the run differentiated it: the
loss with its parameter dicts, optax state or Flax variables, closures included. Each record keeps
the pytest test that made it (``PYTEST_CURRENT_TEST``): discovery (discovery.py) names it.

``jax.checkpoint``/``jax.remat`` (which every framework's remat calls) are wrapped too: an
exception raised through a checkpointed function during the run (a Flax ``init`` failing in a test)
is judged as if a target had raised it.

A checkpointed user function is also recorded as it is called (up to 4): a site the run only calls
forward is then differentiated on its own. Measured alone a checkpoint's cost can mislead (it hides
what the rest of the loss keeps alive), so such a call confirms but never refutes.

Limits: a framework's inner checkpointed function (``nn.remat``'s) is not recorded as a call; a
process the command starts with a scrubbed environment,
or a command that ends with ``os._exit``, records nothing; a ``sitecustomize`` of the user's
environment is shadowed for the run.
"""

from __future__ import annotations

import atexit
import functools
import importlib.util
import inspect
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from remat_lint.trace.protocol import CPU_XLA_FLAGS, OUT_ENV, REQUESTS_ENV
from remat_lint.trace.worker.recorded import Recorded, qualified_name

MAX_RECORDS = 8  # distinct (function, signature) pairs kept
MAX_CALLS = 4  # and of calls of checkpointed user functions (for sites the run never differentiates)


class Recorder:
    def __init__(self) -> None:
        self.records: list[Recorded] = []
        self.calls: list[Recorded] = []  # checkpointed user functions as called (forward, maybe under a grad)
        self.errors: list[BaseException] = []  # raised through a checkpointed function during the run
        self.seen: set[tuple[Any, ...]] = set()
        self.active = True  # off while remat-lint traces, which differentiates too
        self.in_nnx = 0  # inside a Flax NNX transform: its inner jax.grad call cannot be replayed alone

    def wrap(self, fun: Callable[..., Any], argnums: Any, has_aux: bool, transform: str) -> Callable[..., Any]:
        if not callable(fun):
            return fun

        @functools.wraps(fun)
        def recording(*args: Any, **kwargs: Any) -> Any:
            if self.active and not self.in_nnx and len(self.records) < MAX_RECORDS:
                self.record(fun, args, kwargs, argnums, has_aux, transform)
            return fun(*args, **kwargs)

        return recording

    def watch(self, checkpointed: Callable[..., Any]) -> Callable[..., Any]:
        """``checkpointed`` (what ``jax.checkpoint`` returned), keeping what it raises: a test that
        fails with the predicted exception at the site is evidence (its traceback shows the site)."""

        from remat_lint.trace.worker.reach import _definition

        user_code = _definition(checkpointed) is not None  # not a framework's inner function (nn.remat's)

        @functools.wraps(checkpointed)
        def watched(*args: Any, **kwargs: Any) -> Any:
            if user_code and self.active and not self.in_nnx and len(self.calls) < MAX_CALLS:
                self.record(
                    checkpointed,
                    args,
                    kwargs,
                    None,
                    False,
                    "checkpoint call",
                    identity=id(checkpointed),
                    into=self.calls,
                )
            try:
                return checkpointed(*args, **kwargs)
            except Exception as exc:
                if self.active and len(self.errors) < MAX_RECORDS and all(e is not exc for e in self.errors):
                    self.errors.append(exc)
                raise

        return watched

    def record(
        self,
        fun: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        argnums: Any,
        has_aux: bool,
        transform: str,
        identity: Any = None,
        into: list[Recorded] | None = None,
    ) -> None:
        """Keep ``fun`` at the abstract signature of this call (once per signature); ``argnums`` None:
        every argument for ``vjp``, the floating-point ones for a checkpoint call."""
        import jax

        try:
            abstract_args, abstract_kwargs = jax.tree_util.tree_map(_abstract, (args, kwargs))
            signature = str(jax.tree_util.tree_structure((abstract_args, abstract_kwargs))) + str(
                [
                    (getattr(x, "shape", None), str(getattr(x, "dtype", type(x).__name__)))
                    for x in jax.tree_util.tree_leaves((abstract_args, abstract_kwargs))
                ]
            )
        except Exception:  # a pytree JAX cannot flatten here: nothing to record
            return
        key = (identity or getattr(fun, "__code__", None) or id(fun), signature)
        if key in self.seen:
            return
        self.seen.add(key)
        if argnums is None:
            nums = None if transform == "checkpoint call" else tuple(range(len(args)))
        else:
            nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
        observed = os.environ.get("PYTEST_CURRENT_TEST", "").removesuffix(" (call)")
        try:
            label = _label(fun)
        except Exception:  # an odd object in a closure: a name is never worth failing the project's run
            label = ""
        (self.records if into is None else into).append(
            Recorded(fun, abstract_args, abstract_kwargs, nums, has_aux, transform, observed, label)
        )
        _announce(len(self.records) + len(self.calls))


def _announce(recorded: int) -> None:
    """Tell the driver's progress line (driver/progress.py) how many calls this process recorded."""
    from remat_lint.trace.protocol import ProgressReply, encode

    try:
        with open(os.environ[OUT_ENV], "a", encoding="utf-8") as out:
            out.write(encode(ProgressReply(recorded, 0, stage="recorded", process=os.getpid())) + "\n")
    except (KeyError, OSError):  # recording must never break the user's command
        pass


def _label(fun: Callable[..., Any]) -> str:
    """``loss via fun_value_and_grad`` when ``fun`` is a framework's closure (``eqx.filter_value_and_grad``
    differentiates one of its own) over exactly one function of the project: held by the closure, or
    as an attribute of an object it holds; "" when ``fun`` is the project's own, or no such function."""
    from remat_lint.trace.worker.reach import _definition

    if _definition(fun) is not None:
        return ""
    held = []
    for cell in getattr(fun, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # a cell not yet filled
            continue
        held += [value, *getattr(value, "__dict__", {}).values()]
    # by where each is defined: a wrapper of the function (``__wrapped__``) is that function; objects
    # are never hashed (an Equinox Module with a dict field cannot be)
    users = {where: v for v in held if callable(v) and (where := _definition(v)) is not None}
    if len(users) != 1:
        return ""
    (user,) = users.values()
    return f"{qualified_name(inspect.unwrap(user))} via {qualified_name(fun).rsplit('.<locals>.', 1)[-1]}"


def _abstract(x: Any) -> Any:
    import jax

    if isinstance(x, (jax.Array, jax.core.Tracer)) or hasattr(x, "__array__") and hasattr(x, "dtype"):
        dtype = jax.typeof(x).dtype if hasattr(jax, "typeof") else x.dtype
        # a sharded array keeps its sharding: the program then compiles per device (devices.py)
        concrete = isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer)
        sharding = x.sharding if concrete and len(x.sharding.device_set) > 1 else None
        return jax.ShapeDtypeStruct(jax.numpy.shape(x), dtype, sharding=sharding)
    return x


RECORDER = Recorder()


def install() -> None:
    """Wrap JAX's differentiation and checkpoint entry points, and judge the findings when the
    process exits (a process without JAX records nothing)."""
    try:
        import jax
    except ImportError:
        return
    keep_barrier_flag()
    jax.config.update("jax_traceback_filtering", "off")  # the recorded exceptions keep JAX's checkpoint frames
    grad, value_and_grad, vjp, checkpoint, remat = jax.grad, jax.value_and_grad, jax.vjp, jax.checkpoint, jax.remat

    @functools.wraps(grad)
    def grad_(fun: Callable[..., Any], argnums: Any = 0, has_aux: bool = False, **kw: Any) -> Any:
        return grad(RECORDER.wrap(fun, argnums, has_aux, "grad"), argnums, has_aux, **kw)

    @functools.wraps(value_and_grad)
    def value_and_grad_(fun: Callable[..., Any], argnums: Any = 0, has_aux: bool = False, **kw: Any) -> Any:
        return value_and_grad(RECORDER.wrap(fun, argnums, has_aux, "value_and_grad"), argnums, has_aux, **kw)

    @functools.wraps(vjp)
    def vjp_(fun: Callable[..., Any], *primals: Any, has_aux: bool = False, **kw: Any) -> Any:
        return vjp(RECORDER.wrap(fun, None, has_aux, "vjp"), *primals, has_aux=has_aux, **kw)  # type: ignore[call-overload]  # has_aux as the caller passed it: jax.vjp's overloads want a literal

    @functools.wraps(checkpoint)
    def checkpoint_(*args: Any, **kw: Any) -> Any:  # JAX's own errors for its own misuse (REM006)
        return RECORDER.watch(checkpoint(*args, **kw))

    @functools.wraps(remat)
    def remat_(*args: Any, **kw: Any) -> Any:
        return RECORDER.watch(remat(*args, **kw))

    jax.grad, jax.value_and_grad, jax.vjp = grad_, value_and_grad_, vjp_  # type: ignore[assignment]  # The recorder's wrappers replace JAX's transforms (same call signatures, looser annotations).
    jax.checkpoint, jax.remat = checkpoint_, remat_
    if importlib.util.find_spec("flax") is not None:
        from flax import nnx

        nnx.grad, nnx.value_and_grad = (
            _nnx_transform(nnx.grad, "grad"),
            _nnx_transform(nnx.value_and_grad, "value_and_grad"),
        )
    atexit.register(judge)


class _KeepsBarrierFlag(os._Environ[str]):
    def __setitem__(self, key: str, value: str) -> None:
        if key == "XLA_FLAGS" and CPU_XLA_FLAGS not in value:
            value = f"{value} {CPU_XLA_FLAGS}".strip()
        super().__setitem__(key, value)


def keep_barrier_flag() -> None:
    """Tests often set ``XLA_FLAGS`` at import (``--xla_force_host_platform_device_count=8``), before
    JAX starts its backend: the barrier flag the run started with (driver.worker_env) stays in what
    they set, or every program of the run would compile without it and no cost could be measured.
    A command that starts without it (``XLA_FLAGS= CMD``) is left as it is."""
    if CPU_XLA_FLAGS in os.environ.get("XLA_FLAGS", ""):
        os.environ.__class__ = _KeepsBarrierFlag


def _nnx_transform(original: Callable[..., Any], transform: str) -> Callable[..., Any]:
    """``nnx.grad``/``nnx.value_and_grad``, recording the user's function over the state of its Module
    arguments (``nnx.split``), as a function JAX can differentiate on its own (``nnx.merge``)."""

    @functools.wraps(original)
    def wrapped(f: Any = None, **options: Any) -> Any:
        if not callable(f):  # used as a decorator factory: nnx.grad(argnums=1)(f)
            return lambda fun: wrapped(fun, **options)
        transformed = original(f, **options)

        @functools.wraps(transformed)
        def call(*args: Any, **kwargs: Any) -> Any:
            if RECORDER.active and not RECORDER.in_nnx and len(RECORDER.records) < MAX_RECORDS:
                _record_nnx(f, args, kwargs, options, transform)
            RECORDER.in_nnx += 1
            try:
                return transformed(*args, **kwargs)
            finally:
                RECORDER.in_nnx -= 1

        return call

    return wrapped


def _record_nnx(
    f: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], options: dict[str, Any], transform: str
) -> None:
    from flax import nnx

    graphdefs, states = [], []
    for arg in args:
        graphdef, state = nnx.split(arg) if isinstance(arg, nnx.Module) else (None, arg)
        graphdefs.append(graphdef)
        states.append(state)

    def functional(*xs: Any, **kw: Any) -> Any:
        return f(*[nnx.merge(g, x) if g is not None else x for g, x in zip(graphdefs, xs, strict=True)], **kw)

    functional.__qualname__ = getattr(f, "__qualname__", "nnx_function")
    argnums = options.get("argnums", 0)
    nums = [getattr(a, "argnum", a) for a in (argnums if isinstance(argnums, (list, tuple)) else [argnums])]
    RECORDER.record(
        functional,
        tuple(states),
        kwargs,
        tuple(nums),
        bool(options.get("has_aux")),
        transform,
        identity=getattr(f, "__code__", None) or id(f),
    )


def judge() -> None:
    """Judge every requested module's findings against the recorded calls (at exit)."""
    import jax

    from remat_lint.trace.protocol import NoteReply, RecordedReply, Reply, WorkerRequest, encode
    from remat_lint.trace.worker.session import Session

    RECORDER.active = False
    with open(os.environ[OUT_ENV], "a", encoding="utf-8") as out:
        recorded = RecordedReply(
            [f"{r.transform} of {r.name}" for r in [*RECORDER.records, *RECORDER.calls]],
            [f"{type(e).__name__}: {e}"[:300] for e in RECORDER.errors],
        )
        out.write(encode(recorded) + "\n")
        if not RECORDER.records and not RECORDER.errors and not RECORDER.calls:
            return  # a process of the command that differentiated nothing (a helper script): nothing to judge
        with open(os.environ[REQUESTS_ENV], encoding="utf-8") as handle:
            requests = [WorkerRequest.from_json(json.dumps(r)) for r in json.load(handle)]
        # --trace-run requests every module: one without a static site or finding is judged only when a
        # recorded checkpoint ran its code (a registry's ``jax.checkpoint``), and imported only then
        bare = any(not r.findings and not r.sites for r in requests)
        touched = _checkpointed_files(RECORDER.records) if bare else set()
        jax.clear_caches()  # the run (and that look) traced these bodies: a cached trace would not run their lines again
        for request in requests:
            if not (request.findings or request.sites or str(Path(request.path).resolve()) in touched):
                continue  # no checkpoint of a recorded program ran its code: nothing to discover, nothing to import

            def emit(reply: Reply, path: str = request.path) -> None:
                out.write(encode(reply, path) + "\n")
                out.flush()

            try:
                Session(
                    request, emit, recorded=RECORDER.records, calls=RECORDER.calls, errors=RECORDER.errors, search=False
                ).run()
            except Exception as exc:  # one module's failure must not hide the others'
                emit(NoteReply(f"judging against the recorded run failed: {type(exc).__name__}: {exc}"))


def _checkpointed_files(records: list[Recorded]) -> set[str]:
    """The files (resolved) whose code the checkpoints of the recorded programs ran: the wrapped
    function, the body a framework traced, the lines that called it (jaxpr_sites.Site)."""
    from remat_lint.trace.worker import build, costs

    files: set[str] = set()
    for rec in records:
        try:
            p = build.from_recorded(rec)
            program = costs.traced(p.fun, p.args, p.kwargs, tuple(range(len(p.args))))
        except Exception:  # a program that does not rebuild: a module with a site says what failed
            continue
        anchors = [loc for site in program.sites for loc in (site.definition, site.body, *site.calls)]
        files |= {str(Path(loc[0]).resolve()) for loc in anchors if loc is not None}
    return files
