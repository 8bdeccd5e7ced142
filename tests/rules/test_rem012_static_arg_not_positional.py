"""REM012's messages say whether the static argument was passed by keyword or not at all, and count
the Module as argument 0 only for a lifted linen Module; a call expecting another error than
`ValueError` is still reported; a list of `static_argnums` is REM011's; written against surviving mutants."""

from __future__ import annotations

import os

import pytest

from tests.helpers import lint
from tests.project_messages import project_messages

WRAP = "import functools, jax\n@functools.partial(jax.checkpoint, static_argnums=(1,))\ndef f(x, flag=False):\n    return x\n"


def _found(code: str) -> list[tuple[int, str]]:
    return [(f.start.row, f.message) for f in lint(code, {"REM012"})]


def test_the_message_says_passed_by_keyword():
    [(row, message)] = _found(WRAP + "y = f(x, flag=True)\n")
    assert row == 5
    assert message.startswith("`flag` is in `static_argnums` but passed by keyword, so this call raises `ValueError`.")


def test_the_message_says_not_passed():
    [(_, message)] = _found(WRAP + "y = f(x)\n")
    assert message.startswith("`flag` is in `static_argnums` but not passed, so this call raises `ValueError`.")


@pytest.mark.parametrize(("error", "rows"), [("TypeError", [6]), ("ValueError", [])])
def test_a_call_expecting_another_error_is_reported(error, rows):
    code = WRAP + f"try:\n    f(1.0, flag=True)\nexcept {error}:\n    pass\n"
    assert [row for row, _ in _found(code)] == rows


def test_across_modules_a_jax_wrap_counts_no_module_argument(tmp_path, capsys, monkeypatch):
    layers = "import jax\ndouble = jax.checkpoint(lambda x, n=2: x * n, static_argnums=(1,))\n"
    files = {
        "pkg/__init__.py": "",
        "pkg/layers.py": layers,
        "pkg/model.py": "from pkg.layers import double\ny = double(1.0)\n",
    }
    assert project_messages(tmp_path, capsys, monkeypatch, files, "REM012") == [
        (
            os.path.join("pkg", "model.py"),
            2,
            "REM012 `n` is in `static_argnums` of `double` (layers.py:2) but not passed, so this call raises "
            "`ValueError`. `jax.checkpoint` checks `static_argnums=(1,)` only against the call's positional arguments (1): "
            "a keyword or a default does not count; pass `n` positionally",
        ),
    ]


def test_a_list_of_static_argnums_is_left_to_rem011():
    # A list makes every call raise TypeError before JAX looks at the arguments: REM011 says so.
    code = WRAP.replace("static_argnums=(1,)", "static_argnums=[1]") + "y = f(x, flag=True)\n"
    assert [(f.code, f.start.row) for f in lint(code, {"REM011", "REM012"})] == [("REM011", 2)]


def test_static_argnums_held_in_a_constant_is_read_by_the_value_layer() -> None:
    code = "import jax\nSTATIC = (1,)\ndef f(x, flag=False):\n    return x\ng = jax.checkpoint(f, static_argnums=STATIC)\ny = g(x, flag=True)\n"
    assert [(f.code, f.start.row) for f in lint(code, {"REM012"})] == [("REM012", 6)]
    assert lint(code.replace("STATIC = (1,)", "STATIC = load()"), {"REM012"}) == []
