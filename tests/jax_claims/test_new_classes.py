"""What REM018, REM019 and REM107 tell users about JAX and Flax, checked against the installed
packages: the exception each message names (its text), the memory REM107 states, that the fixes
run, and that their quiet fixture is correct code. Also why REM108 flags a
``*_with_no_batch_dims*`` policy under ``vmap`` only when every operand is mapped."""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import lint

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
nn = pytest.importorskip("flax.linen")
nnx = pytest.importorskip("flax.nnx")
flax_errors = pytest.importorskip("flax.errors")
from jax._src import ad_checkpoint as _adc  # noqa: E402  (saved_residuals is not public in 0.10.2)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
KEY = jax.random.key(0)
X = jnp.ones((2, 4))
cp = jax.checkpoint_policies


def message(code: str, rule: str) -> str:
    (finding,) = lint(textwrap.dedent(code), {rule})
    return finding.message


def test_quiet_fixture_is_correct_code():
    runpy.run_path(str(FIXTURES / "quiet" / "remat_scan_nnx_closures_policy_tables.py"), run_name="__main__")


# --- REM018 ---------------------------------------------------------------------------------------

PARTITION_ERROR = 'Trying to transform a Partitioned variable but "partition_name" is not specified in metadata_params'


class DenseLayer(nn.Module):
    @nn.compact
    def __call__(self, x):
        init = nn.with_partitioning(nn.initializers.lecun_normal(), (None, "model"))
        return jnp.tanh(nn.Dense(4, kernel_init=init)(x))


class ParamLayer(nn.Module):
    @nn.compact
    def __call__(self, x):
        init = nn.with_logical_partitioning(nn.initializers.ones, ("embed", "mlp"))
        return jnp.tanh(x @ self.param("w", init, (4, 4)))


@pytest.mark.parametrize("lengths", [(3,), (2, 2)])
@pytest.mark.parametrize("layer", [DenseLayer, ParamLayer])
def test_remat_scan_over_partitioned_params_raises_at_init(layer, lengths):
    class Stack(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.remat_scan(layer, lengths=lengths)()(x)

    with pytest.raises(flax_errors.PartitioningUnspecifiedError, match=PARTITION_ERROR):
        Stack().init(KEY, X)


def test_scan_with_metadata_params_names_the_stacked_axis():
    class ScanLayer(DenseLayer):
        def __call__(self, x, _):
            return super().__call__(x), None

    class Stack(nn.Module):
        @nn.compact
        def __call__(self, x):
            scan = nn.scan(
                nn.remat(ScanLayer),
                variable_axes={"params": 0},
                split_rngs={"params": True},
                length=3,
                metadata_params={nn.PARTITION_NAME: "layers"},
            )
            return scan()(x, None)[0]

    kernel = Stack().init(KEY, X)["params"]["ScanCheckpointScanLayer_0"]["Dense_0"]["kernel"]
    assert kernel.names == ("layers", None, "model") and kernel.value.shape == (3, 4, 4)


def test_rem018_message_states_the_error():
    msg = message(
        """
        import flax.linen as nn
        class L(nn.Module):
            @nn.compact
            def __call__(self, x):
                return nn.Dense(4, kernel_init=nn.with_partitioning(init, ('a', None)))(x)
        y = nn.remat_scan(L, lengths=(2,))
        """,
        "REM018",
    )
    assert (
        "raises `PartitioningUnspecifiedError` at init" in msg
        and f"'{PARTITION_ERROR}'" in msg
        and "metadata_params={nn.PARTITION_NAME" in msg
    )


# --- REM019 ---------------------------------------------------------------------------------------


class Block(nnx.Module):
    def __init__(self, rngs):
        self.linear = nnx.Linear(4, 4, rngs=rngs)
        self.norm = nnx.BatchNorm(4, rngs=rngs)
        self.drop = nnx.Dropout(0.5, rngs=rngs)

    def closure(self, x, layer):
        return nnx.remat(lambda h: getattr(self, layer)(self.linear(h)))(x)

    def argument(self, x, layer):
        return nnx.remat(lambda block, h: getattr(block, layer)(block.linear(h)))(self, x)


@pytest.mark.parametrize("grad", [None, nnx.grad, nnx.value_and_grad], ids=["call", "grad", "value_and_grad"])
@pytest.mark.parametrize(("layer", "variable"), [("norm", "BatchStat"), ("drop", "RngCount")])
def test_nnx_remat_closure_over_stateful_layer_raises(layer, variable, grad):
    block = Block(nnx.Rngs(0, dropout=1))
    run = (lambda b: b.closure(X, layer)) if grad is None else grad(lambda b: b.closure(X, layer).sum())
    with pytest.raises(flax_errors.TraceContextError, match=f"Cannot mutate {variable} from a different trace level"):
        run(block)


def test_nnx_remat_closure_over_a_module_holding_state_raises():
    class Inner(nnx.Module):
        def __init__(self, rngs):
            self.norm = nnx.BatchNorm(4, rngs=rngs)
            self.drop = nnx.Dropout(0.5, rngs=rngs)

        def __call__(self, x):
            return self.drop(self.norm(x))

    class Outer(nnx.Module):
        def __init__(self, rngs):
            self.inner = Inner(rngs)

        def __call__(self, x):
            return nnx.remat(lambda h: self.inner(h))(x)

    with pytest.raises(
        flax_errors.TraceContextError, match="Cannot mutate (BatchStat|RngCount) from a different trace level"
    ):
        nnx.grad(lambda m: m(X).sum())(Outer(nnx.Rngs(0, dropout=1)))


@pytest.mark.parametrize("layer", ["norm", "drop", "linear"])
def test_nnx_remat_with_the_module_as_argument_runs(layer):
    block = Block(nnx.Rngs(0, dropout=1))
    nnx.grad(lambda b: b.argument(X, layer).sum())(block)


def test_nnx_remat_closure_runs_in_eval_mode_and_over_stateless_layers():
    block = Block(nnx.Rngs(0, dropout=1))
    nnx.grad(lambda b: b.closure(X, "linear").sum())(block)
    block.eval()
    for layer in ("norm", "drop"):
        nnx.grad(lambda b, name=layer: b.closure(X, name).sum())(block)


def test_rem019_message_states_the_error():
    msg = message(
        """
        from flax import nnx
        class B(nnx.Module):
            def __init__(self, rngs):
                self.bn = nnx.BatchNorm(4, rngs=rngs)
            def __call__(self, x):
                return nnx.remat(lambda h: self.bn(h))(x)
        """,
        "REM019",
    )
    assert "TraceContextError: Cannot mutate BatchStat from a different trace level" in msg


# --- REM107 ---------------------------------------------------------------------------------------

MEMORY_SCRIPT = """
import json, jax, jax.numpy as jnp
def layer(w, x):
    return jnp.tanh(jnp.tanh(x @ w) * 2.0)
def model(checkpoint):
    def run(ws, x):
        for w in ws:
            x = (jax.checkpoint(layer) if checkpoint else layer)(w, x)
        return jnp.mean(x ** 2)
    return run
ratios = []
for depth, batch, width in [(8, 64, 256), (4, 128, 512), (12, 32, 128)]:
    ws = [jax.ShapeDtypeStruct((width, width), jnp.float32)] * depth
    x = jax.ShapeDtypeStruct((batch, width), jnp.float32)
    for transform in (jax.grad, jax.value_and_grad):
        temp = [jax.jit(transform(model(c))).lower(ws, x).compile().memory_analysis().temp_size_in_bytes
                for c in (False, True)]
        ratios.append(temp[0] / temp[1])
print(json.dumps(ratios))
"""


def test_skipping_the_full_checkpoint_multiplies_temp_memory():
    # XLA:CPU strips optimization barriers unless told not to; the flag must be set before JAX starts.
    env = dict(os.environ, XLA_FLAGS="--xla_disable_hlo_passes=cse_barrier_expander", JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    ratios = json.loads(proc.stdout.strip().splitlines()[-1])
    assert (round(min(ratios), 1), round(max(ratios), 1)) == (2.5, 6.4), ratios
    msg = message(
        """
        import jax
        P = {'full': None}
        def build(f, s):
            p = P[s]
            if p is not None:
                f = jax.checkpoint(f, policy=p)
            return f
        """,
        "REM107",
    )
    assert "2.5x-6.4x the full checkpoint's temp memory" in msg


def test_policy_none_is_the_full_checkpoint():
    def f(w, x):
        return jnp.sum(jnp.tanh(jnp.tanh(x @ w) @ w))

    args = (jnp.ones((4, 4)), X)
    saved = [
        [d for _, d in _adc.saved_residuals(g, *args)]
        for g in (jax.checkpoint(f, policy=None), jax.checkpoint(f, policy=cp.nothing_saveable))
    ]
    assert saved[0] == saved[1]


# --- REM108's limit: a *_with_no_batch_dims* policy under vmap with unmapped weights ------------


def _vmapped_residuals(policy, weights_axis):
    def f(w1, w2, x):
        return jnp.sum(jnp.tanh(jnp.tanh(x @ w1) @ w2))

    g = jax.checkpoint(f, policy=policy)
    w1 = jnp.ones((3, 8, 8)) if weights_axis == 0 else jnp.ones((8, 8))
    loss = lambda w1, w2, x: jnp.sum(jax.vmap(g, in_axes=(weights_axis, None, 0))(w1, w2, x))  # noqa: E731
    return len(_adc.saved_residuals(loss, w1, jnp.ones((8, 8)), jnp.ones((3, 8))))


def test_vmap_leaves_dots_with_unmapped_weights_saveable():
    """vmap folds the mapped axis of ``x @ w`` into a free dimension when ``w`` is not mapped, so
    ``dots_with_no_batch_dims_saveable`` still saves those dots: it is not ``nothing_saveable``.
    Only a dot whose operands are both mapped gains a batch dimension (per-example weights)."""
    no_batch_dims = cp.dots_with_no_batch_dims_saveable
    assert _vmapped_residuals(no_batch_dims, None) == _vmapped_residuals(cp.dots_saveable, None) == 5
    assert _vmapped_residuals(cp.nothing_saveable, None) == 3
    assert _vmapped_residuals(no_batch_dims, 0) == 4  # between nothing_saveable (3) and dots_saveable (5)
