"""REM301 (opt-in) reports a scan over layers only when its body certainly applies no checkpoint:
array methods count as known calls, other methods do not; written against surviving mutants."""

from __future__ import annotations

from tests.helpers import lint

SCAN = "def f(ps, x):\n    return jax.lax.scan(layer, x, ps['layers'])[0].sum()\ng = jax.grad(f)\n"


def _found(code: str) -> list[tuple[int, int, str]]:
    return [(f.start.row, f.start.column, f.message) for f in lint(code, {"REM301"})]


def test_a_body_calling_only_array_methods_is_reported():
    code = "import jax\ndef layer(c, p):\n    return (c @ p).astype(c.dtype), None\n" + SCAN
    [(row, column, message)] = _found(code)
    assert (row, column) == (5, 11)
    assert message.startswith("`jax.lax.scan` over layers in differentiated code has no checkpoint on its body.")


def test_a_body_calling_a_method_that_may_checkpoint_inside_is_quiet():
    assert _found("import jax\ndef layer(c, p):\n    return c.block(p), None\n" + SCAN) == []
