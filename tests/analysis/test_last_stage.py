"""Which work after a checkpointed call ``analysis/last_stage.py`` counts as cheap, seen through
REM102's findings and the operations its message lists; written against surviving mutants
(docs/mutation-testing.md)."""

from __future__ import annotations

import pytest

from tests.helpers import lint

# An earlier stage runs before the checkpointed head, so the head's checkpoint is REM102's case
# whenever only cheap work follows it.
_LOSS = """\
import jax
import jax.numpy as jnp


def blocks(params, x):
    for w in params:
        x = x + jnp.tanh(x @ w)
    return x


head = jax.checkpoint(blocks)


def penalty(p):
    return PENALTY


def loss(params, x):
    h = blocks(params, x)
    out = head(params, h)
    TAIL


grads = jax.grad(loss)
"""


def _rem102(tail: str, penalty: str = "1e-4 * jnp.sum(p ** 2)") -> list[str]:
    code = _LOSS.replace("TAIL", tail).replace("PENALTY", penalty)
    return [f.message for f in lint(code) if f.code == "REM102"]


@pytest.mark.parametrize(
    ("tail", "listed"),
    [
        ("return jax.nn.relu(out).mean()", "(`.mean()`, `jax.nn.relu`)"),
        ("return jnp.linalg.norm(out)", "(`jnp.linalg.norm`)"),
        ("out += 1.0\n    return out.sum()", "(`+`, `.sum()`)"),
        ("return out.mean() + penalty(params)", "(`+`, `.mean()`, `penalty()`)"),
    ],
)
def test_cheap_work_after_the_last_stage_is_listed_in_the_message(tail: str, listed: str):
    [message] = _rem102(tail)
    assert message.startswith("`head(...)` is the last stage of `loss`")
    assert f"Only cheap work follows it {listed}, so" in message


@pytest.mark.parametrize(
    "tail",
    [
        "return jax.nn.dot_product_attention(out, out, out).mean()",  # jax.nn, but attention
        "return jnp.dot(out, out).mean()",
        "return jnp.fft.fft(out).real.mean()",
        "return (out @ out).mean()",
        "return unknown(out)",
    ],
)
def test_expensive_work_after_the_checkpointed_call_keeps_it_quiet(tail: str):
    assert _rem102(tail) == []


def test_a_penalty_function_with_a_contraction_is_not_cheap():
    assert _rem102("return out.mean() + penalty(params)", penalty="jnp.sum(p @ p)") == []


_THROUGH = """\
import jax
import jax.numpy as jnp


def blocks(params, x):
    for w in params:
        x = x + jnp.tanh(x @ w)
    return x


def l2(p):
    return 1e-4 * jnp.sum(p ** 2)


def data_loss(params, x):
    return STAGE


def loss(params, x):
    return data_loss(params, x) + l2(params)


grads = jax.value_and_grad(loss)
"""


def test_a_whole_stage_through_a_helper_is_reported_when_only_a_mean_follows():
    [finding] = lint(_THROUGH.replace("STAGE", "jnp.mean(jax.checkpoint(blocks)(params, x))"))
    assert (finding.code, finding.start.row) == ("REM102", 16)
    assert finding.message.startswith("`jax.checkpoint(blocks)(...)` is the last stage of `loss` (through `data_loss`)")


def test_a_whole_stage_through_a_helper_followed_by_a_squared_error_runs_the_forward_twice():
    """Not exempt: it saves at most one activation (tests/jax_claims/test_whole_model.py)."""
    [finding] = lint(_THROUGH.replace("STAGE", "(jax.checkpoint(blocks)(params, x) - x) ** 2"))
    assert (finding.code, finding.start.row) == ("REM102", 16)
    assert "under `jax.value_and_grad` it is the whole forward pass, so the forward runs twice" in finding.message
