"""The --trace shape syntax (``f32[8,128]``): parsed and printed in one place, as JAX prints avals."""

from __future__ import annotations

import jax.numpy as jnp
import pytest
from jax._src.core import ShapedArray

from remat_lint.trace.inputs import inline_targets
from remat_lint.trace.shapes import LONG_DTYPES, SHORT_DTYPES, Shape, ShapeError, format_shape, parse_shape


@pytest.mark.parametrize(
    "text, shape",
    [
        ("f32[8,8]", Shape("float32", (8, 8))),
        ("bf16[2, 3]", Shape("bfloat16", (2, 3))),
        ("bool[]", Shape("bool", ())),
        ("pred[2]", Shape("bool", (2,))),
        ("int32[4]", Shape("int32", (4,))),
        (" u8[1,2,3] ", Shape("uint8", (1, 2, 3))),
    ],
)
def test_parse_shape(text: str, shape: Shape) -> None:
    assert parse_shape(text) == shape


@pytest.mark.parametrize("dtype", sorted(LONG_DTYPES))
@pytest.mark.parametrize("dims", [(), (8,), (2, 4, 8)])
def test_every_dtype_round_trips_and_prints_as_jax_does(dtype: str, dims: tuple[int, ...]) -> None:
    text = format_shape(dtype, dims)
    assert parse_shape(text) == Shape(dtype, dims) and str(Shape(dtype, dims)) == text
    assert text == ShapedArray(dims, jnp.dtype(dtype)).str_short(short_dtypes=True)  # print_saved_residuals' notation
    assert parse_shape(f"{dtype}[{','.join(map(str, dims))}]") == Shape(dtype, dims)  # the long name reads too


def test_names_jax_shortens_by_rule_or_not_at_all() -> None:
    assert format_shape("float8_e4m3fn", (2,)) == ShapedArray((2,), jnp.dtype("float8_e4m3fn")).str_short(
        short_dtypes=True
    )
    assert format_shape("key<fry>", (2,)) == "key<fry>[2]"  # a PRNG key's dtype name, as JAX prints it
    assert set(SHORT_DTYPES) - {"pred"} == {format_shape(d, ())[:-2] for d in LONG_DTYPES}


@pytest.mark.parametrize("text", ["f32(8)", "f32[8.5]", "[8]", "q32[8]", "f32[-1]"])
def test_bad_shape_strings_say_what_is_expected(text: str) -> None:
    with pytest.raises(ShapeError, match="shape string|unknown dtype"):
        parse_shape(text)


def test_a_bad_shape_in_an_inline_comment_is_kept_as_its_error() -> None:
    (target,) = inline_targets("# remat-lint: trace(q32[8])\ndef loss(x):\n    return x\n")
    assert target.spec is None and "unknown dtype 'q32'" in (target.error or "")
