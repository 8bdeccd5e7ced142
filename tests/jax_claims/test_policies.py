"""What REM008, REM104 and REM105 tell users about JAX policies, checked against the installed JAX:
each claim a message makes, run for real on tiny shapes (residuals with ``saved_residuals``,
compiled temp memory with optimization barriers kept, as on GPU/TPU)."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import textwrap
import warnings

import pytest

from tests.helpers import lint

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
from jax._src import ad_checkpoint as _adc  # noqa: E402  (saved_residuals is not public in 0.10.2)
from jax.ad_checkpoint import checkpoint_name  # noqa: E402

cp = jax.checkpoint_policies
W = jnp.ones((4, 4))
X = jnp.ones((2, 4))


def layer(w, x):
    h = checkpoint_name(jnp.dot(x, w), "attn_out")
    return jnp.sum(jnp.tanh(h) * 2.0)


def residuals(policy=None, checkpoint: bool = True) -> list[str]:
    """What the backward pass keeps, minus the inputs (always kept)."""
    fn = jax.checkpoint(layer, policy=policy) if checkpoint else layer
    found = [d for _, d in _adc.saved_residuals(fn, W, X)]
    return sorted(d.split(" from ")[0] for d in found if not d.startswith("from "))


NO_CHECKPOINT = residuals(checkpoint=False)
DEFAULT = residuals()


def message(code: str, rule: str) -> str:
    (finding,) = lint(textwrap.dedent(code), {rule})
    return finding.message


def always_true(prim, *_, **__):
    return True


# --- REM104 ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "policy",
    [
        cp.everything_saveable,
        cp.save_anything_except_these_names("attn_out"),
        lambda *_, **__: True,
        always_true,
        cp.save_from_both_policies(cp.dots_saveable, cp.everything_saveable),
    ],
    ids=["everything_saveable", "save_anything_except_these_names", "lambda-True", "def-True", "save_from_both"],
)
def test_saves_every_intermediate_the_unchekpointed_function_would(policy):
    assert DEFAULT == []  # the checkpoint otherwise keeps nothing but its inputs
    assert residuals(policy) == NO_CHECKPOINT != []


def test_save_anything_except_these_names_ignores_its_names():
    msg = message("from jax import checkpoint_policies as cp\np = cp.save_anything_except_these_names('a')", "REM104")
    assert "`lambda *_, **__: True`" in msg and "these names included, like `everything_saveable`" in msg
    assert "use `save_any_names_but_these`" in msg
    assert tuple(map(int, jax.__version__.split(".")[:3])) >= (0, 10, 2)  # "since JAX 0.10.2"
    source = inspect.getsource(_adc.save_anything_except_these_names)
    assert "return lambda *_, **__: True" in source
    # The excluded name itself is saved: the policy answers True for the name primitive too.
    assert cp.save_anything_except_these_names("attn_out")(_adc.name_p, name="attn_out") is True
    # The suggested factory does exclude the name (and saves the other named values).
    assert residuals(cp.save_any_names_but_these("attn_out")) == DEFAULT
    assert residuals(cp.save_any_names_but_these("other")) == ["named 'attn_out'"]


MEMORY_SCRIPT = """
import json, jax, jax.numpy as jnp
cp = jax.checkpoint_policies
def block(p, x):
    return x + jax.nn.gelu(jnp.tanh(x) @ p[0]) @ p[1]
def loss(f):
    def run(ps, x):
        for p in ps:
            x = f(p, x)
        return jnp.mean(x ** 2)
    return run
ps = [(jax.ShapeDtypeStruct((128, 512), jnp.float32), jax.ShapeDtypeStruct((512, 128), jnp.float32))] * 3
x = jax.ShapeDtypeStruct((128, 128), jnp.float32)
temp = {}
for name, f in [("none", block), ("everything", jax.checkpoint(block, policy=cp.everything_saveable)),
                ("default", jax.checkpoint(block))]:
    temp[name] = jax.jit(jax.grad(loss(f))).lower(ps, x).compile().memory_analysis().temp_size_in_bytes
print(json.dumps(temp))
"""


def test_everything_saveable_uses_more_temp_memory_with_barriers_kept():
    # XLA:CPU strips optimization barriers unless told not to; the flag must be set before JAX starts.
    env = dict(os.environ, XLA_FLAGS="--xla_disable_hlo_passes=cse_barrier_expander", JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    temp = json.loads(proc.stdout.strip().splitlines()[-1])
    assert temp["everything"] > temp["none"] > temp["default"], temp
    msg = message("import jax\ng = jax.checkpoint(f, policy=jax.checkpoint_policies.everything_saveable)", "REM104")
    assert "saves no memory" in msg and "can even use more temp memory than no checkpoint" in msg


# --- REM105 ----------------------------------------------------------------------------------


def test_always_false_is_the_default_policy():
    assert residuals(lambda *_, **__: False) == DEFAULT == residuals(cp.nothing_saveable)
    msg = message("import jax\ng = jax.checkpoint(f, policy=lambda *_, **__: False)", "REM105")
    assert "exactly like the default policy (`nothing_saveable`)" in msg


def test_always_none_fails_at_the_first_grad_only():
    def none_policy(prim, *args, **params):
        pass

    fn = jax.checkpoint(layer, policy=none_policy)  # accepted when wrapping
    fn(W, X)
    jax.jit(fn)(W, X)
    with pytest.raises(TypeError) as error:
        jax.grad(fn)(W, X)
    msg = message("import jax\ndef p(prim, *args, **params):\n    pass\ng = jax.checkpoint(f, policy=p)", "REM105")
    quoted = msg.split("`TypeError: ", 1)[1].split("...`", 1)[0]
    assert str(error.value).startswith(quoted)


@pytest.mark.parametrize("returned", [0, 1, 0.0, "'yes'"])
@pytest.mark.parametrize("transform", [jax.grad, jax.value_and_grad])
def test_any_constant_other_than_a_bool_fails_at_the_first_grad(returned, transform):
    fn = jax.checkpoint(layer, policy=eval(f"lambda *_, **__: {returned}"))  # noqa: S307 (the case's own literal)
    with pytest.raises(TypeError, match="Value returned by a remat policy should be a bool"):
        transform(fn)(W, X)
    msg = message(f"import jax\ng = jax.checkpoint(f, policy=lambda *_, **__: {returned})", "REM105")
    assert f"always returns `{returned}`, which is not a bool" in msg


# --- REM008 ----------------------------------------------------------------------------------


def test_an_undeclared_name_saves_offloads_or_excludes_nothing_without_warning():
    assert residuals(cp.save_only_these_names("attn_out")) == ["named 'attn_out'"]
    assert residuals(cp.save_only_these_names("atn_out")) == DEFAULT  # "nothing is saved under it"
    assert residuals(cp.save_any_names_but_these("atn_out")) == ["named 'attn_out'"]  # "excludes nothing"
    offload = dict(names_which_can_be_saved=[], offload_src="device", offload_dst="pinned_host")
    assert residuals(cp.save_and_offload_only_these_names(names_which_can_be_offloaded=["attn_out"], **offload)) == [
        "output of device_put"
    ]
    assert (
        residuals(cp.save_and_offload_only_these_names(names_which_can_be_offloaded=["atn_out"], **offload)) == DEFAULT
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        jax.jit(jax.grad(jax.checkpoint(layer, policy=cp.save_only_these_names("atn_out"))))(W, X).block_until_ready()
    assert caught == []  # "never warns"


def test_undeclared_name_message():
    msg = message(
        """
        import jax
        from jax.ad_checkpoint import checkpoint_name
        y = checkpoint_name(x, 'attn_out')
        p = jax.checkpoint_policies.save_any_names_but_these('atn_out')
        """,
        "REM008",
    )
    assert (
        "did you mean 'attn_out'? JAX matches names exactly and never warns, so it excludes nothing: every "
        "named value is still saved"
    ) in msg
