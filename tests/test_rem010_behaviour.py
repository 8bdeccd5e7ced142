"""REM010 (ignored static_argnames): cases found by mutation testing that no other test pinned."""

from __future__ import annotations

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
