"""A declared target that cannot be built: the flagged function its build called before failing is
traced alone at the shapes of that call (trace/fallback.py), and the verdict says why."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.trace_cases import lint

pytest.importorskip("flax")

# ``block`` needs inputs of 16 features (no shape search finds them); Model calls it, then fails
# at ``if training`` with ``training`` traced (TracerBoolConversionError at init).
MODEL = textwrap.dedent(
    """\
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    W = jnp.ones((16, 32)) / 16


    def block(x):
        return jax.checkpoint(lambda y: jnp.tanh(y @ W) @ W.T, policy=jax.checkpoint_policies.everything_saveable)(x)


    class Model(nn.Module):
        @nn.compact
        def __call__(self, x, training):
            h = block(nn.Dense(16)(x))
            if training:
                h = h * 2
            return h
    """
)
PYPROJECT = '[tool.remat-lint]\n[[tool.remat-lint.trace.targets]]\nmodule = "model:Model"\ninit_args = ["f32[4,16]", "bool[]"]\n'


def _rem104_trace(tmp_path: Path, model: str, pyproject: str, row: int) -> tuple[dict, str]:
    """The verdict on the one finding of ``model`` (REM104 at ``row``), and the run's stderr."""
    (tmp_path / "model.py").write_text(model)
    (tmp_path / "pyproject.toml").write_text(pyproject)
    proc = lint("--trace", "--no-cache", "--output-format", "json", "model.py", cwd=tmp_path)
    [finding] = json.loads(proc.stdout)
    assert (finding["code"], finding["location"]["row"]) == ("REM104", row), proc.stderr
    return finding["trace"], proc.stderr


def test_a_target_that_cannot_be_built_falls_back_to_the_function_its_build_called(tmp_path: Path):
    trace, stderr = _rem104_trace(tmp_path, MODEL, PYPROJECT, 9)
    assert trace["status"] == "confirmed", trace
    assert "[shapes observed in the declared target's failed build]" in trace["reason"]
    assert (
        "(fallback: target Model could not be built (TracerBoolConversionError: Attempted boolean conversion"
        in trace["reason"]
    )
    assert trace["reason"].endswith("block was traced alone, as that build called it)")
    assert "target Model failed at build: TracerBoolConversionError" in stderr


# A linen Module carries the finding: Model constructs and calls ``RematBlock`` (16 features, dropout
# 0.2, ``deterministic`` static), then fails at ``if training``; {call} is where Model calls it.
MODULE_MODEL = textwrap.dedent(
    """\
    import flax.linen as nn
    import jax
    import jax.numpy as jnp


    class Block(nn.Module):
        features: int
        rate: float = 0.1

        @nn.compact
        def __call__(self, x, deterministic):
            h = nn.Dropout(self.rate)(nn.Dense(self.features)(x), deterministic=deterministic)
            return nn.Dense(self.features)(jnp.tanh(h))


    RematBlock = nn.remat(Block, static_argnums=(2,), policy=jax.checkpoint_policies.everything_saveable)


    class Model(nn.Module):
        @nn.compact
        def __call__(self, x, training):
            {call}
            if training:
                h = h * 2
            return h
    """
)


def _lint_module_model(tmp_path: Path, call: str) -> dict:
    return _rem104_trace(tmp_path, MODULE_MODEL.format(call=call), PYPROJECT, 16)[0]


def test_a_module_its_failed_build_called_is_built_alone_with_its_own_checkpoint(tmp_path: Path):
    trace = _lint_module_model(tmp_path, "h = RematBlock(16, rate=0.2)(nn.Dense(16)(x), True)")
    assert trace["status"] == "confirmed", trace
    assert "[shapes observed in the declared target's failed build]" in trace["reason"]
    assert "(fallback: target Model could not be built (TracerBoolConversionError:" in trace["reason"]
    assert trace["reason"].endswith(
        "RematBlock was built alone, with the attributes and at the shapes that build constructed and called it with)"
    )
    [site] = trace["sites"]  # the site table of RematBlock's own checkpoint, at the shapes Model called it with
    assert (site["line"], site["policy"], site["shapes"]) == (16, "everything_saveable", "recorded")
    assert [r["shape"] for r in site["residuals"]] == ["f32[4,16]", "f32[4,16]"]


def test_a_module_its_failed_build_never_reached_stays_unconfirmed_and_says_so(tmp_path: Path):
    trace = _lint_module_model(tmp_path, "h = x if training else RematBlock(16)(x, True)")
    assert trace["status"] == "unconfirmed", trace
    assert trace["reason"].startswith("target Model could not be built (TracerBoolConversionError:")
    assert trace["reason"].endswith("its build never reached Block, RematBlock (line 16): no call to trace alone")


# NNX: the declared target is a function that builds Model and calls it; Block's ``__call__`` is
# checkpointed by ``@nnx.remat`` with a policy that keeps everything (REM104, line 11).
NNX_MODEL = textwrap.dedent(
    """\
    import jax
    import jax.numpy as jnp
    from flax import nnx


    class Block(nnx.Module):
        def __init__(self, features, rngs):
            self.a = nnx.Linear(16, features, rngs=rngs)
            self.b = nnx.Linear(features, 16, rngs=rngs)

        @nnx.remat(policy=jax.checkpoint_policies.everything_saveable)
        def __call__(self, x):
            return self.b(jnp.tanh(self.a(x)))


    class Model(nnx.Module):
        def __init__(self, rngs):
            self.block = Block(32, rngs)

        def __call__(self, x, training):
            h = self.block(x)
            if training:
                h = h * 2
            return h


    def forward(x, training):
        return Model(nnx.Rngs(0))(x, training)
    """
)
NNX_PYPROJECT = (
    '[tool.remat-lint]\n[[tool.remat-lint.trace.targets]]\nfunction = "model:forward"\nargs = ["f32[4,16]", "bool[]"]\n'
)


def test_an_nnx_module_its_failed_trace_called_is_built_alone_from_its_graph_and_state(tmp_path: Path):
    trace, _ = _rem104_trace(tmp_path, NNX_MODEL, NNX_PYPROJECT, 11)
    assert trace["status"] == "confirmed", trace
    assert (
        "(fallback: target forward(f32[4,16], bool[]) could not be traced (TracerBoolConversionError:"
        in trace["reason"]
    )
    assert trace["reason"].endswith(
        "Block was built alone, with the attributes and at the shapes that trace constructed and called it with)"
    )
    [site] = trace["sites"]  # Block's residuals at Model's shapes: f32[4,32] hidden units
    assert [r["shape"] for r in site["residuals"]] == ["f32[4,32]", "f32[4,32]"]


# The checkpoint is on a method other than ``__call__``: ``nn.remat(..., methods=["encode"])``
# (REM104, line 14); Model calls ``RematBlock(16).encode``, then fails at ``if training``.
METHOD_MODEL = textwrap.dedent(
    """\
    import flax.linen as nn
    import jax
    import jax.numpy as jnp


    class Block(nn.Module):
        features: int

        @nn.compact
        def encode(self, x):
            return nn.Dense(self.features)(jnp.tanh(nn.Dense(self.features)(x)))


    RematBlock = nn.remat(Block, methods=["encode"], policy=jax.checkpoint_policies.everything_saveable)


    class Model(nn.Module):
        @nn.compact
        def __call__(self, x, training):
            h = RematBlock(16).encode(nn.Dense(16)(x))
            if training:
                h = h * 2
            return h
    """
)


def test_a_module_method_its_failed_build_called_is_built_alone_through_that_method(tmp_path: Path):
    trace, _ = _rem104_trace(tmp_path, METHOD_MODEL, PYPROJECT, 14)
    assert trace["status"] == "confirmed", trace
    assert "(fallback: target Model could not be built (TracerBoolConversionError:" in trace["reason"]
    assert trace["reason"].endswith(
        "RematBlock.encode was built alone, with the attributes and at the shapes that build constructed "
        "and called it with)"
    )
    [site] = trace["sites"]  # encode's residuals at the shapes Model called it with
    assert (site["line"], site["shapes"]) == (14, "recorded")
    assert [r["shape"] for r in site["residuals"]] == ["f32[4,16]", "f32[4,16]"]


# NNX: ``@nnx.remat`` on ``encode``, a method other than ``__call__`` (REM104, line 11).
NNX_METHOD_MODEL = NNX_MODEL.replace("def __call__(self, x):", "def encode(self, x):").replace(
    "h = self.block(x)", "h = self.block.encode(x)"
)


def test_an_nnx_method_its_failed_trace_called_is_built_alone_through_that_method(tmp_path: Path):
    trace, _ = _rem104_trace(tmp_path, NNX_METHOD_MODEL, NNX_PYPROJECT, 11)
    assert trace["status"] == "confirmed", trace
    assert trace["reason"].endswith(
        "Block.encode was built alone, with the attributes and at the shapes that trace constructed and called it with)"
    )
    [site] = trace["sites"]
    assert [r["shape"] for r in site["residuals"]] == ["f32[4,32]", "f32[4,32]"]
