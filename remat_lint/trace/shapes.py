"""The shape syntax of --trace: ``f32[8,128]``, ``bf16[2,3]``, ``bool[]``, ``i32[4]``.

It is the notation ``print_saved_residuals`` prints (``aval.str_short(short_dtypes=True)``), so a
shape --trace shows can be pasted where it reads one (pyproject targets, ``# remat-lint: trace(...)``
comments). Plain Python, no JAX: the main process validates configuration with it cheaply.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

SHORT_DTYPES = {
    "bool": "bool",
    "pred": "bool",
    "bf16": "bfloat16",
    "f16": "float16",
    "f32": "float32",
    "f64": "float64",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
    "c64": "complex64",
    "c128": "complex128",
}
LONG_DTYPES = frozenset(SHORT_DTYPES.values())
SHAPE_RE = re.compile(r"^\s*(?P<dtype>[a-z][a-z0-9_]*)\[(?P<dims>[0-9,\s]*)\]\s*$")
# A shape token inside an inline comment (dtype names never start with a digit or quote).
SHAPE_TOKEN = re.compile(r"(?<![\w'\"])([a-z][a-z0-9_]*)\[([0-9,\s]*)\]")
LOOKS_LIKE_SHAPE = re.compile(r"^\s*[a-z][a-z0-9_]*\[")


class ShapeError(ValueError):
    """A string that is not a shape in this syntax."""


@dataclass(frozen=True)
class Shape:
    dtype: str  # numpy name: float32, bfloat16, bool...
    dims: tuple[int, ...]

    def __str__(self) -> str:
        return format_shape(self.dtype, self.dims)

    @property
    def size(self) -> int:
        return math.prod(self.dims)


def parse_shape(text: str) -> Shape:
    """``"f32[8,8]"`` (or ``"float32[8,8]"``) -> Shape("float32", (8, 8)); raises ShapeError."""
    match = SHAPE_RE.match(text)
    if not match:
        raise ShapeError(f"not a shape string: {text!r} (expected e.g. 'f32[8,128]' or 'bool[]')")
    name = match.group("dtype")
    dtype = SHORT_DTYPES.get(name, name if name in LONG_DTYPES else None)
    if dtype is None:
        raise ShapeError(f"unknown dtype {name!r} in {text!r} (use one of {', '.join(sorted(SHORT_DTYPES))})")
    dims = tuple(int(d) for d in match.group("dims").replace(" ", "").split(",") if d)
    return Shape(dtype, dims)


def is_shape(text: str) -> bool:
    return bool(SHAPE_RE.match(text))


def format_shape(dtype: str, dims: Sequence[int]) -> str:
    """``("float32", (8, 8))`` -> ``f32[8,8]``, as JAX shortens a dtype name (float -> f, uint -> u,
    int -> i, complex -> c: ``bf16``, ``f8_e4m3fn``); a name it does not shorten (``bool``, a PRNG
    key's ``key<fry>``) stays."""
    short = dtype.replace("float", "f").replace("uint", "u").replace("int", "i").replace("complex", "c")
    return f"{short}[{','.join(map(str, dims))}]"
