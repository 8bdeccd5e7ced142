"""Where --trace gets abstract inputs from, in order: ``[[tool.remat-lint.trace.targets]]``, an
inline ``# remat-lint: trace(f32[8,8], bool[])`` comment above a ``def``, jaxtyping annotations.

This module only parses: it never imports JAX, so the main process can validate configuration
cheaply. Shape strings (``f32[8,8]``) are read by ``shapes.py``; the worker turns a ``Shape`` into a
``jax.ShapeDtypeStruct``.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from remat_lint.trace.shapes import LONG_DTYPES, LOOKS_LIKE_SHAPE, SHAPE_TOKEN, Shape, ShapeError, is_shape, parse_shape

INLINE_RE = re.compile(r"#\s*remat-lint:\s*trace\((?P<args>.*)\)\s*$")
_MARK = "\x00shape:"


class InputError(ValueError):
    """A target specification that cannot be used (a bad shape string raises ``ShapeError``)."""


def map_leaves(fn: Callable[[Any], Any], value: Any) -> Any:
    """``fn`` applied to every leaf of nested lists, tuples and dicts."""
    if isinstance(value, list):
        return [map_leaves(fn, v) for v in value]
    if isinstance(value, tuple):
        return tuple(map_leaves(fn, v) for v in value)
    if isinstance(value, dict):
        return {k: map_leaves(fn, v) for k, v in value.items()}
    return fn(value)


def parse_value(value: Any) -> Any:
    """A configuration value: shape strings (also nested in lists and tables) become Shapes,
    everything else is a Python value passed as is."""
    return map_leaves(_config_leaf, value)


def _config_leaf(value: Any) -> Any:
    if isinstance(value, str):
        if is_shape(value):
            return parse_shape(value)
        if LOOKS_LIKE_SHAPE.match(value):
            parse_shape(value)  # raises a helpful error for a malformed shape string
    return value


# --- inline comments -----------------------------------------------------------------------------


@dataclass
class CallSpec:
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)


def parse_inline(text: str) -> CallSpec:
    """The inside of ``trace(...)``: shape strings, Python literals, ``name=value``, nesting."""
    marked = SHAPE_TOKEN.sub(lambda m: repr(_MARK + m.group(0)), text)
    try:
        call = ast.parse(f"f({marked})", mode="eval").body
        assert isinstance(call, ast.Call)
        args = [ast.literal_eval(a) for a in call.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
    except (SyntaxError, ValueError, AssertionError) as exc:
        raise InputError(f"cannot read trace({text}): {exc}") from None
    return CallSpec([_unmark(a) for a in args], {k: _unmark(v) for k, v in kwargs.items()})


def _unmark(value: Any) -> Any:
    return map_leaves(
        lambda v: parse_shape(v[len(_MARK) :]) if isinstance(v, str) and v.startswith(_MARK) else v, value
    )


@dataclass
class InlineTarget:
    name: str  # the def's name
    line: int  # the def's line
    comment_line: int
    spec: CallSpec | None
    error: str | None = None


def inline_targets(source: str) -> list[InlineTarget]:
    """Module-level defs with a ``# remat-lint: trace(...)`` comment in the comment block right above
    them (above their decorators, if any)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    lines = source.splitlines()
    found = []
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        row = first - 1  # 1-based row of the line above
        while row >= 1 and lines[row - 1].strip().startswith("#"):
            match = INLINE_RE.search(lines[row - 1])
            if match:
                try:
                    found.append(InlineTarget(node.name, node.lineno, row, parse_inline(match.group("args"))))
                except (InputError, ShapeError) as exc:
                    found.append(InlineTarget(node.name, node.lineno, row, None, str(exc)))
                break
            row -= 1
    return found


# --- [[tool.remat-lint.trace.targets]] -----------------------------------------------------------

TARGET_KEYS = {
    "function",
    "args",
    "kwargs",
    "static",
    "argnums",
    "transform",
    "module",
    "module_args",
    "init_args",
    "init_rngs",
}
TRANSFORMS = ("auto", "value_and_grad", "grad", "vjp", "none")


@dataclass
class TargetSpec:
    """One configured target; ``function``/``module`` are "module.path:attr" references."""

    function: str | None
    args: list[Any]
    kwargs: dict[str, Any]
    static: dict[str, Any]
    argnums: tuple[int, ...] | None
    transform: str
    module: str | None
    module_args: Any
    init_args: list[Any]
    init_rngs: list[str] | None
    path: str  # the file that defines the function (or the module class)

    @property
    def ref(self) -> str:
        return self.function or f"{self.module}.apply"


def resolve_module_file(reference: str, root: Path) -> Path | None:
    """``pkg.mod`` or ``path/to/mod.py`` (relative to the config's directory) -> the file."""
    if reference.endswith(".py"):
        path = Path(reference) if os.path.isabs(reference) else root / reference
        return path if path.is_file() else None
    parts = reference.split(".")
    for base in (root, root / "src"):
        for candidate in (base.joinpath(*parts).with_suffix(".py"), base.joinpath(*parts, "__init__.py")):
            if candidate.is_file():
                return candidate
    return None


def _split_ref(ref: Any, key: str) -> tuple[str, str]:
    if not isinstance(ref, str) or ref.count(":") != 1 or not all(ref.split(":")):
        raise InputError(f'`{key}` must look like "pkg.module:name", got {ref!r}')
    mod, attr = ref.split(":")
    return mod, attr


def parse_targets(table: dict[str, Any], root: Path) -> tuple[list[TargetSpec], list[str]]:
    """Targets from the ``[tool.remat-lint.trace]`` table, and one message per unusable entry."""
    specs: list[TargetSpec] = []
    problems: list[str] = []
    entries = table.get("targets", [])
    if not isinstance(entries, list):
        return [], ["[tool.remat-lint.trace] targets must be an array of tables ([[tool.remat-lint.trace.targets]])"]
    for index, entry in enumerate(entries):
        try:
            specs.append(_target(entry, root))
        except (InputError, ShapeError) as exc:
            problems.append(f"[[tool.remat-lint.trace.targets]] #{index + 1}: {exc}")
    return specs, problems


def _target(entry: Any, root: Path) -> TargetSpec:
    spec = check_target(entry)
    mod = (spec.function if spec.function is not None else str(spec.module)).partition(":")[0]
    path = resolve_module_file(mod, root)
    if path is None:
        raise InputError(f"cannot find module {mod!r} under {root}")
    return dataclasses.replace(spec, path=str(path.resolve()))


def check_target(entry: Any) -> TargetSpec:
    """A target entry checked and parsed, whatever the project's files hold (its ``path`` is not
    yet resolved): configuration loading calls this, so a bad entry stops the run at once."""
    if not isinstance(entry, dict):
        raise InputError("each target must be a table")
    unknown = set(entry) - TARGET_KEYS
    if unknown:
        raise InputError(f"unknown keys {sorted(unknown)} (known: {sorted(TARGET_KEYS)})")
    function, module = entry.get("function"), entry.get("module")
    if function is None and module is None:
        raise InputError("give `function` (and/or `module` for a Flax linen Module)")
    _split_ref(function if function is not None else module, "function" if function is not None else "module")
    if module is not None:
        _split_ref(module, "module")
    transform = entry.get("transform", "auto")
    if transform not in TRANSFORMS:
        raise InputError(f"`transform` must be one of {', '.join(TRANSFORMS)}")
    argnums = entry.get("argnums")
    if isinstance(argnums, int):
        argnums = (argnums,)
    elif argnums is not None:
        if not isinstance(argnums, list) or not all(isinstance(a, int) for a in argnums):
            raise InputError("`argnums` must be an int or a list of ints")
        argnums = tuple(argnums)
    args = entry.get("args", [])
    kwargs = entry.get("kwargs", {})
    static = entry.get("static", {})
    init_args = entry.get("init_args", [])
    if not isinstance(args, list) or not isinstance(init_args, list):
        raise InputError("`args` and `init_args` must be lists")
    if not isinstance(kwargs, dict) or not isinstance(static, dict):
        raise InputError("`kwargs` and `static` must be tables")
    rngs = entry.get("init_rngs")
    if rngs is not None and (not isinstance(rngs, list) or not all(isinstance(r, str) for r in rngs)):
        raise InputError("`init_rngs` must be a list of rng stream names")
    return TargetSpec(
        function=function,
        args=parse_value(args),
        kwargs=parse_value(kwargs),
        static=dict(static),
        argnums=argnums,
        transform=transform,
        module=module,
        module_args=entry.get("module_args", []),
        init_args=parse_value(init_args),
        init_rngs=rngs,
        path="",
    )


# --- what to tell a user who has no inputs -----------------------------------------------------------

# Parameter names whose values the shape syntax cannot spell in reasonable time (a pytree of arrays,
# a PRNG key): --trace-run records them from the project's own run instead. RNG_NAMES and FLAG_NAMES
# also steer the worker's shape search.
PYTREE_NAMES = frozenset(
    {
        "params",
        "variables",
        "state",
        "opt_state",
        "train_state",
        "grads",
        "batch",
        "model",
        "optimizer",
        "carry",
        "cache",
        "weights",
    }
)
RNG_NAMES = frozenset({"key", "rng", "rngs", "prng", "prng_key", "rng_key", "dropout_rng"})
FLAG_NAMES = frozenset({"train", "training", "is_training", "deterministic", "decode", "init_cache", "use_cache"})
LABEL_NAMES = frozenset({"labels", "label", "targets", "target", "classes", "y_true"})
TOKEN_NAMES = frozenset({"tokens", "token_ids", "input_ids", "ids", "indices", "positions"})
JAXTYPING_DTYPES = {"Float": "f32", "Float32": "f32", "Int": "i32", "Int32": "i32", "Integer": "i32", "Bool": "bool"}
PYTHON_VALUES = {"bool": "False", "int": "1", "float": "1.0"}


@dataclass(frozen=True)
class Example:
    """What to write for one parameter in ``trace(...)``; ``text`` is None where it cannot be inferred."""

    name: str
    text: str | None
    why: str


def parameter_examples(source: str, function: str) -> list[Example]:
    """One Example per required positional parameter of the module-level ``def function``, inferred
    from its annotation (a jaxtyping hint; ``bool``/``int``/``float``, bound as Python values) or its
    name (``labels`` -> ``i32[8]``, ``train`` -> ``False``); a parameter dict, optimizer state or PRNG
    key cannot be inferred."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    node = next(
        (n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == function), None
    )
    if node is None:
        return []
    positional = [*node.args.posonlyargs, *node.args.args]
    sizes: dict[str, int] = {}
    return [_example(a.arg, a.annotation, sizes) for a in positional[: len(positional) - len(node.args.defaults)]]


def _example(name: str, annotation: ast.expr | None, sizes: dict[str, int]) -> Example:
    if annotation is not None:
        hinted = _annotated(annotation, sizes)
        if hinted is not None:
            return Example(name, hinted, "its annotation")
    if name in PYTREE_NAMES:
        return Example(name, None, "a pytree (parameter dict, optimizer state, batch)")
    if name in RNG_NAMES:
        return Example(name, None, "a PRNG key")
    if name in FLAG_NAMES:
        return Example(name, "False", "a flag, bound as a Python value")
    if name in LABEL_NAMES:
        return Example(name, "i32[8]", "integer labels, one per example")
    if name in TOKEN_NAMES:
        return Example(name, "i32[8,128]", "integer ids")
    return Example(name, None, "neither its annotation nor its name says its shape")


def _annotated(annotation: ast.expr, sizes: dict[str, int]) -> str | None:
    """``Float[Array, "b 16"]`` -> ``f32[8,16]`` (named dims share a size, as the jaxtyping source
    does); ``bool``/``int``/``float`` -> a Python value."""
    if isinstance(annotation, ast.Name) and annotation.id in PYTHON_VALUES:
        return PYTHON_VALUES[annotation.id]
    if not (isinstance(annotation, ast.Subscript) and isinstance(annotation.slice, ast.Tuple)):
        return None
    kind = annotation.value.attr if isinstance(annotation.value, ast.Attribute) else getattr(annotation.value, "id", "")
    elts = annotation.slice.elts
    if (
        kind not in JAXTYPING_DTYPES
        or len(elts) != 2
        or not isinstance(elts[1], ast.Constant)
        or not isinstance(elts[1].value, str)
    ):
        return None
    dims = []
    for dim in elts[1].value.split():
        if dim.isdigit():
            dims.append(dim)
        elif dim.isidentifier():
            dims.append(str(sizes.setdefault(dim, 8)))
        elif dim not in ("...", "*batch") and not dim.startswith("*"):
            return None  # symbolic sizes (``n+1``) are left to the user
    return f"{JAXTYPING_DTYPES[kind]}[{','.join(dims)}]"


def suggestion(module_ref: str, function: str, examples: list[Example], ran: str = "") -> str:
    """What to add: the project's own run first (it needs no shapes, and works for parameter dicts,
    optimizer state and Flax variables), or what that run (``ran``, --trace-run) missed; a declaration
    only when every parameter's example could be inferred, so that pasting it traces."""
    run = (
        f"`{ran}` differentiated no program that reaches `{function}`"
        if ran
        else 'take the shapes from a run of the project: --trace-run "python -m pytest -q tests" (or a one-step '
        "training script)"
    )
    names = ", ".join(e.name for e in examples)
    unknown = [e for e in examples if e.text is None]
    if unknown:
        missing = "; ".join(f"`{e.name}`: {e.why}" for e in unknown)
        return (
            f"{run}. No declaration is offered for `{function}({names})`, whose shapes cannot be inferred "
            f"({missing}); a declaration spells each parameter as a shape string (f32[8,128]), a dict of them "
            f'({{"w": "f32[8,128]"}}) or a Python value, in a `remat-lint: trace(...)` comment above `def {function}` '
            "or in [[tool.remat-lint.trace.targets]]"
        )
    shapes = ", ".join(str(e.text) for e in examples)
    listed = ", ".join(f'"{e.text}"' if "[" in str(e.text) else str(e.text).lower() for e in examples)
    inferred = (
        f" (inferred: {', '.join(f'`{e.name}` from {e.why}' for e in examples)}; edit the sizes to yours)"
        if examples
        else ""
    )
    return (
        f"{run}; or declare them for `{function}({names})`{inferred}, "
        f"either above `def {function}`:\n"
        f"    # remat-lint: trace({shapes})\n"
        f"or in pyproject.toml:\n"
        f"    [[tool.remat-lint.trace.targets]]\n"
        f'    function = "{module_ref}:{function}"\n'
        f"    args = [{listed}]"
    )


# --- jaxtyping -----------------------------------------------------------------------------------------


def jaxtyping_shape(annotation: Any, sizes: dict[str, int], default: int = 8) -> Shape | None:
    """A jaxtyping array annotation (``Float[Array, "b 8"]``) as a Shape; named dims share a size."""
    dims_spec = getattr(annotation, "dims", None)
    dtypes = getattr(annotation, "dtypes", None)
    if dims_spec is None or not hasattr(annotation, "dim_str"):
        return None
    names = list(dtypes) if isinstance(dtypes, (list, tuple)) else []
    dtype = next((d for d in ("float32", "int32", "bool") if d in names), None)
    if dtype is None:
        dtype = next((d for d in names if d in LONG_DTYPES), "float32")
    dims: list[int] = []
    for dim in dims_spec:
        kind = type(dim).__name__
        if kind == "_FixedDim":
            dims.append(int(dim.size))
        elif kind == "_NamedDim":
            dims.append(sizes.setdefault(dim.name, default))
        elif kind in ("_AnonymousDim",):
            dims.append(default)
        elif kind == "_SymbolicDim":
            try:
                dims.append(int(eval(dim.expr, {"__builtins__": {}}, dict(sizes))))
            except Exception:
                return None
        elif "Variadic" in kind:
            continue  # `*batch` / `...`: no batch dims
        else:
            return None
    return Shape(dtype, tuple(dims))
