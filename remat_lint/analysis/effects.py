"""Python side effects in a function that JAX traces (REM201).

Effects found:
- ``print(...)``; logging (``logging``/``absl.logging`` functions, a ``logging.getLogger`` logger)
  that formats a traced value (trace-time logging of shapes and configuration is intentional and
  not reported: axlearn, MaxText);
- writes to ``global`` names; writes to ``nonlocal`` names of a function outside the checkpointed
  one; mutation of containers (``.append``/``.update``/``d[k] = v``...) and attribute writes on
  objects that live outside it: module-level names, closure variables, and the instance of a
  plain method (``self``; Flax and NNX Module state is managed by the transform and is exempt);
- writes to ``sys.stdout``/``sys.stderr`` (printing); file I/O, also through a file object
  opened outside the body (``LOG.write(...)``); the global ``random``/``numpy.random`` generators (and generator objects made outside
  the body: ``RNG = np.random.default_rng(0)``), clocks.

State changes made by a same-module context manager entered in the body (``with scope(...):``,
axlearn's invocation-context stack) are not effects either: what it sets on entry it undoes on
exit, scoping trace-time state rather than leaking it (``scoped_by_with``).

Not effects: anything on objects created in the body, parameters (pytrees the checkpoint
rebuilds), ``self.sow``/Flax variables, and per-call side channels: a closure variable of the
function that defines the checkpointed function and calls it or hands it to a call such as
``lax.scan`` (graphcast's ``nonlocal`` output structures, MaxText's ``updated_graphdef[0] = ...``),
which is fresh on every call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Literal

import libcst as cst

from remat_lint.analysis.bodies import Bodies, CheckpointedFunction, Function, is_instance_method, positional_params
from remat_lint.analysis.semantic import Scope, SemanticModel, leftmost_name
from remat_lint.analysis.sites import RematSite
from remat_lint.analysis.tracing import TracedValues, invocations
from remat_lint.analysis.values import Values
from remat_lint.apis import PARTIAL

Kind = Literal["print", "logging", "global", "nonlocal", "container", "attribute", "io", "random", "time"]

_LOG_METHODS = frozenset(
    {
        "debug",
        "info",
        "warning",
        "warn",
        "error",
        "exception",
        "critical",
        "fatal",
        "log",
        "vlog",
        "log_every_n",
        "log_first_n",
        "log_every_n_seconds",
        "log_if",
    }
)
_LOGGING_MODULES = ("logging", "absl.logging")
# Writes to the interpreter's streams: printing by another name.
_STREAM_WRITES = frozenset(
    f"sys.{stream}.{method}"
    for stream in ("stdout", "stderr", "__stdout__", "__stderr__")
    for method in ("write", "writelines")
)
# File objects, and what writes through one.
_OPENERS = frozenset({"builtins.open", "io.open", "gzip.open", "bz2.open", "lzma.open", "codecs.open"})
_FILE_WRITES = frozenset({"write", "writelines"})
_IO_CALLS = frozenset(
    {
        "builtins.open",
        "numpy.save",
        "numpy.savez",
        "numpy.savez_compressed",
        "numpy.savetxt",
        "numpy.load",
        "numpy.loadtxt",
        "pickle.dump",
        "pickle.load",
        "json.dump",
        "json.load",
        "io.open",
    }
)
# Draws from the global generators (seeded constructors like numpy.random.default_rng(0) are not).
_RANDOM_DRAWS = frozenset(
    {
        "random",
        "rand",
        "randn",
        "randint",
        "random_integers",
        "random_sample",
        "ranf",
        "sample",
        "uniform",
        "normal",
        "standard_normal",
        "choice",
        "choices",
        "permutation",
        "shuffle",
        "beta",
        "binomial",
        "exponential",
        "gamma",
        "gauss",
        "poisson",
        "bytes",
        "getrandbits",
        "randrange",
        "lognormal",
        "multinomial",
    }
)
# Generator objects: a draw from one made outside the body (``RNG = np.random.default_rng(0)``)
# advances shared state and is baked in like a draw from the global generator.
_GENERATORS = frozenset(
    {"numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.Generator", "random.Random"}
)
_GENERATOR_DRAWS = _RANDOM_DRAWS | {"integers", "standard_normal", "standard_exponential", "laplace", "logistic"}
_TIME_CALLS = frozenset(
    {
        "time.time",
        "time.time_ns",
        "time.perf_counter",
        "time.perf_counter_ns",
        "time.monotonic",
        "time.process_time",
        "datetime.datetime.now",
        "datetime.datetime.utcnow",
        "datetime.datetime.today",
        "datetime.date.today",
    }
)
_MUTATORS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "remove",
        "pop",
        "popitem",
        "clear",
        "update",
        "setdefault",
        "add",
        "discard",
        "appendleft",
        "extendleft",
        "popleft",
        "sort",
        "reverse",
    }
)
# Module state that the transform itself manages.
_MANAGED_RECEIVER_FAMILIES = frozenset({"flax", "nnx"})


@dataclass(frozen=True)
class Effect:
    node: cst.CSTNode  # the statement or call with the effect
    kind: Kind
    subject: str  # what to name in the message: ``print``, ``CACHE``, ``counter``...


class EffectFinder:
    """Side effects of one checkpointed function, or of a helper it calls (``traced`` None: which
    values are traced is unknown, so logging is not judged)."""

    def __init__(self, values: Values, bodies: Bodies, fn: CheckpointedFunction) -> None:
        self.values = values
        self.model = values.model
        self.bodies = bodies
        self.fn = fn
        self.receiver_managed = fn.site.api.family in _MANAGED_RECEIVER_FAMILIES
        self.current: Function = fn.node

    def effects(self, function: Function, traced: TracedValues | None) -> Iterator[Effect]:
        self.current = function
        scope = self.model.functions[id(function)].scope
        for node in self.bodies.nodes(function):
            if isinstance(node, cst.Call):
                effect = self._call(node, traced)
            elif isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
                effect = next((e for t in targets if (e := self._write(node, t, scope)) is not None), None)
            else:
                effect = None
            if effect is not None:
                yield effect

    def _call(self, call: cst.Call, traced: TracedValues | None) -> Effect | None:
        qname = self.model.qualified_name(call.func) or ""
        if qname == "builtins.print":
            return Effect(call, "print", "print")
        if qname in _STREAM_WRITES:
            return Effect(call, "print", self._spelling(call.func))
        if self._is_logging(call.func, qname):
            if traced is not None and any(traced.is_traced(a.value) for a in call.args):
                return Effect(call, "logging", self._spelling(call.func))
            return None
        if qname in _IO_CALLS:
            return Effect(call, "io", self._spelling(call.func))
        module, _, name = qname.rpartition(".")
        if module in ("random", "numpy.random") and name in _RANDOM_DRAWS:
            return Effect(call, "random", self._spelling(call.func))
        if qname in _TIME_CALLS:
            return Effect(call, "time", self._spelling(call.func))
        func = call.func
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in _GENERATOR_DRAWS
            and self._outside_generator(func.value)
        ):
            return Effect(call, "random", self._spelling(func))
        if isinstance(func, cst.Attribute) and func.attr.value in _MUTATORS and self._outside(func.value):
            return Effect(call, "container", self._spelling(func.value))
        if (
            isinstance(func, cst.Attribute)
            and func.attr.value in _FILE_WRITES
            and self._file_opened_outside(func.value)
        ):
            return Effect(call, "io", self._spelling(func))
        return None

    def _file_opened_outside(self, expr: cst.BaseExpression) -> bool:
        """A name bound, outside the body, to a file ``open``ed (``LOG = open(path, "a")``, or
        ``with open(path) as fh:`` around the checkpointed function's definition)."""
        binding = self.model.single_binding(expr)
        if binding is None or self._created_inside(binding.node):
            return False
        opened = binding.value if binding.kind == "assign" else None
        if isinstance(binding.node, cst.AsName) and isinstance(item := self.model.parent(binding.node), cst.WithItem):
            opened = item.item
        return isinstance(opened, cst.Call) and self.model.qualified_name(opened.func) in _OPENERS

    def _outside_generator(self, expr: cst.BaseExpression) -> bool:
        """A name bound once, outside the body, to a new ``numpy``/``random`` generator object."""
        made = self.model.assigned_value(expr) if isinstance(expr, cst.Name) else None
        return (
            isinstance(made, cst.Call) and self.model.qualified_name(made.func) in _GENERATORS and self._outside(expr)
        )

    def _is_logging(self, func: cst.BaseExpression, qname: str) -> bool:
        module, _, name = qname.rpartition(".")
        if module in _LOGGING_MODULES and name in _LOG_METHODS:
            return True
        if not (isinstance(func, cst.Attribute) and func.attr.value in _LOG_METHODS):
            return False
        logger = self.model.assigned_value(func.value)  # logger = logging.getLogger(__name__)
        return isinstance(logger, cst.Call) and self.model.qualified_name(logger.func) in (
            "logging.getLogger",
            "absl.logging.get_absl_logger",
        )

    def _write(self, statement: cst.CSTNode, target: cst.BaseExpression, scope: Scope) -> Effect | None:
        if isinstance(target, cst.Name):
            where = self.model.scope_of_name.get(id(target), scope)
            if target.value in where.global_names:
                return Effect(statement, "global", target.value)
            if target.value in where.nonlocal_names and self._outside_nonlocal(where, target.value):
                return Effect(statement, "nonlocal", target.value)
            return None
        if isinstance(target, (cst.Tuple, cst.List)):
            return next(
                (e for el in target.elements if (e := self._write(statement, el.value, scope)) is not None), None
            )
        if isinstance(target, cst.Attribute) and self._outside(target.value):
            return Effect(statement, "attribute", self._spelling(target))
        if isinstance(target, cst.Subscript) and self._outside(target.value):
            return Effect(statement, "container", self._spelling(target.value))
        return None

    def _outside(self, expr: cst.BaseExpression) -> bool:
        """``expr`` is rooted in an object that lives outside the checkpointed function."""
        root = leftmost_name(expr)
        if root is None or isinstance(expr, cst.Call):
            return False
        bindings = self.model.bindings_of(root.value, self.model.scope_of_name.get(id(root), self.model.module_scope))
        if not bindings or any(b.kind in ("import", "def", "class") for b in bindings):
            return False  # a builtin, an unknown name, a module, a function or a class
        if bindings[0].kind == "param":
            return self._is_unmanaged_receiver(bindings[0].node)
        if any(self._created_inside(b.node) for b in bindings):
            return False  # created in the body
        owner = self.model.enclosing_function(bindings[0].node)
        if owner is None:
            return _module_level(self.model, bindings[0].node)
        return not self._per_call(owner.scope)

    def _is_unmanaged_receiver(self, param: cst.CSTNode) -> bool:
        """``self`` of a plain (non-Flax, non-NNX) method: its attributes outlive the call."""
        definition = self.model.parent(self.model.parent(param))
        if not isinstance(definition, cst.FunctionDef) or not is_instance_method(self.model, definition):
            return False
        return positional_params(definition)[0] is param and not self.receiver_managed

    def _outside_nonlocal(self, where: Scope, name: str) -> bool:
        """A ``nonlocal`` name owned by a function outside the checkpointed one (and not a
        per-call side channel)."""
        scope = where.parent
        while scope is not None and scope.kind != "module":
            own = [b for b in scope.bindings.get(name, ()) if self._binds_in(b.node, scope)]
            if scope.kind == "function" and own:
                return not self._created_inside(scope.node) and not self._per_call(scope)
            scope = scope.parent
        return False

    def _binds_in(self, node: cst.CSTNode, scope: Scope) -> bool:
        info = self.model.enclosing_function(node)
        if isinstance(node, cst.Param):
            info = self.model.functions.get(id(self.model.parent(self.model.parent(node))))
        return info is not None and info.scope is scope

    def _created_inside(self, node: cst.CSTNode) -> bool:
        """``node`` (a binding) is in the checkpointed function or the helper being analysed."""
        return any(self._inside(node, f) for f in (self.fn.node, self.current))

    def _per_call(self, owner: Scope) -> bool:
        """The checkpointed function is defined inside ``owner`` and called or handed to a call there
        (``lax.scan(body, ...)``): ``owner``'s variables are fresh on every call of it (a per-call
        side channel, not shared state)."""
        if owner.kind != "function" or not self._inside(self.fn.node, owner.node):
            return False
        uses = [*invocations(self.values, self.fn.site), *_handed_to(self.model, self.fn.site)]
        return any(self._inside(call, owner.node) for call in uses)

    def _inside(self, node: cst.CSTNode, container: cst.CSTNode) -> bool:
        return node is container or any(a is container for a in self.model.ancestors(node))

    def _spelling(self, node: cst.CSTNode) -> str:
        return self.model.module.code_for_node(node)


# Effects a context manager undoes on exit; printing, I/O, randomness and clocks it cannot undo.
SCOPED_KINDS = frozenset({"global", "nonlocal", "container", "attribute"})


def scoped_by_with(model: SemanticModel, call: cst.Call) -> bool:
    """``call`` is the context manager of a ``with`` item (``with child_context(...):``)."""
    return isinstance(model.parent(call), cst.WithItem)


def _module_level(model: SemanticModel, node: cst.CSTNode) -> bool:
    return model.enclosing_function(node) is None and not any(
        isinstance(a, cst.ClassDef) for a in model.ancestors(node)
    )


def _handed_to(model: SemanticModel, site: RematSite) -> Iterator[cst.Call]:
    """Calls that get the checkpointed callable as an argument or call it, directly
    (``lax.scan(jax.checkpoint(body), ...)``) or through a name bound to it, even one bound more than
    once (``step = body`` / ``step = jax.checkpoint(body)``, then ``lax.scan(step, ...)``) or
    conditionally (``step = jax.checkpoint(body) if remat else body``).
    ``functools.partial`` only wraps it for a later call, which may be anywhere: not a use."""
    value: cst.CSTNode | None = model.parent(site.node) if site.form == "decorator" else site.call
    if value is None:
        return
    for call in model.calls:
        if model.qualified_name(call.func) in PARTIAL:
            continue
        for expr in (call.func, *(a.value for a in call.args)):
            if (
                _may_be(expr, value)
                or isinstance(expr, cst.Name)
                and any(
                    b.node is value or (b.value is not None and _may_be(b.value, value))
                    for b in model.bindings_of(expr.value, model.scope_of(expr))
                )
            ):
                yield call


def _may_be(expr: cst.BaseExpression, value: cst.CSTNode) -> bool:
    """``expr`` is ``value``, or may be: ``jax.checkpoint(f) if remat else f``."""
    if isinstance(expr, cst.IfExp):
        return _may_be(expr.body, value) or _may_be(expr.orelse, value)
    return expr is value
