"""REM010 (ignored static_argnames): cases found by mutation testing that no other test pinned."""

from __future__ import annotations

import pytest

from tests.helpers import lint


def test_names_not_all_literal_get_no_fix_and_no_named_parameter() -> None:
    """``OTHER`` may name any parameter: the message cannot say which are traced, and no indices are offered."""
    source = "from jax import checkpoint\ndef layer(x, w, mode):\n    return x\ng = checkpoint(layer, static_argnames=('mode', OTHER))\n"
    [finding] = lint(source, {"REM010"})
    assert finding.fix is None
    assert finding.message == (
        "`jax.checkpoint` ignores `static_argnames=('mode', OTHER)`. JAX honours it only under the experimental "
        "`jax_remat3` flag, so the argument is traced (Python control flow on it raises `TracerBoolConversionError`, a "
        "str value `TypeError`); use `static_argnums=` and pass it positionally"
    )


def test_static_argnums_is_read_against_the_function_of_its_own_wrap() -> None:
    """``f``'s ``n`` is index 1 at the first wrap; at the second, ``g`` is unknown, so nothing shows
    that index 1 is ``n`` and the ignored ``static_argnames`` is reported."""
    source = (
        "import jax\ndef f(x, n):\n    return x\na = jax.checkpoint(f, static_argnums=(1,))\n"
        "b = jax.checkpoint(g, static_argnums=(1,), static_argnames=('n',))\n"
    )
    [finding] = lint(source, {"REM010"})
    assert finding.start.row == 5
    assert finding.message.startswith("`jax.checkpoint` ignores `static_argnames=('n',)`.")


def test_names_held_in_a_constant_are_read_by_the_value_layer() -> None:
    """``static_argnames=NAMES`` with ``NAMES = ("n",)``: the message names ``n``, and a
    ``static_argnums`` that already makes ``n`` static leaves nothing to report."""
    source = "import jax\nNAMES = ('n',)\ndef f(x, n):\n    return x\na = jax.checkpoint(f, static_argnames=NAMES)\n"
    [finding] = lint(source, {"REM010"})
    assert "so `n` is traced" in finding.message
    assert lint(source.replace("static_argnames=NAMES", "static_argnums=(1,), static_argnames=NAMES"), {"REM010"}) == []


# REM010 stays quiet in a module that names the ``jax_remat3`` flag (which makes JAX honour
# ``static_argnames``) in code, in any spelling, and reports a module that mentions it only in a
# comment or names something else (analysis/flags.py).

CHECKPOINT = "g = jax.checkpoint(f, static_argnames=('training',))\n"


@pytest.mark.parametrize(
    ("flag", "reported"),
    [
        ('jax.config.update("jax_remat3", True)\n', False),  # a string
        ('os.environ["JAX_REMAT3"] = "1"\n', False),  # the environment variable
        ("with jax._src.config.remat3(True):\n    pass\n", False),  # an attribute
        ("@jtu.with_config(jax_remat3=True)\nclass T:\n    pass\n", False),  # a keyword
        ("on = jax.config.jax_remat3\n", False),  # read, not set
        ("# jax_remat3 would make static_argnames work\n", True),  # a comment is no code
        ('jax.config.update("jax_enable_x64", True)\n', True),
        ("@jtu.with_config(jax_enable_x64=True)\nclass T:\n    pass\n", True),
        ("on = jax.config.remat\n", True),
        ("", True),
    ],
)
def test_rem010_is_quiet_where_the_module_names_the_remat3_flag(flag, reported):
    source = "import os\nimport jax\nfrom jax._src import test_util as jtu\n" + flag + CHECKPOINT
    rows = [f.start.row for f in lint(source) if f.code == "REM010"]
    assert rows == ([source.count("\n")] if reported else [])
