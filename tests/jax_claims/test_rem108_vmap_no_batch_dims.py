"""What REM108 tells users about JAX, checked against the installed package: each case of its
fixture keeps the residuals of ``nothing_saveable`` (fewer than ``dots_saveable``), and each case
of its quiet twin keeps more than ``nothing_saveable`` (the policy saves the unmapped products):
all of ``dots_saveable``'s when every weight is shared or vmap is absent. The linen cases (a
Module class that ``nn.vmap`` maps) run through ``init`` and ``apply``."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import lint

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
from jax._src.ad_checkpoint import saved_residuals  # noqa: E402  (not public in jax 0.10.2)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
INVALID = FIXTURES / "rem108_no_batch_dims_policy_under_vmap.py"
QUIET = FIXTURES / "quiet" / "rem108_vmap_shared_weights.py"
# Every no-batch-dims policy the fixtures spell, a factory's call included.
NO_BATCH_DIMS = re.compile(r"cp\.\w*_with_no_batch_dims\w*(\([^)]*\))?")

B = 3
X, W, WB = jnp.ones((B, 2, 4)), jnp.ones((4, 4)), jnp.ones((B, 4, 4))
INVALID_ARGS: dict[str, tuple[Any, ...]] = {
    "per_example": (X, WB, WB),
    "weights_on_axis_one": (X, jnp.ones((4, B, 4)), WB),
    "offloaded": (X, WB, WB),
    "through_a_name": (X, WB, WB),
    "params_batched": (X, {"w1": WB, "w2": WB}),
    "nnx_mapped": (X, WB, WB),
    "per_head": (X, X, X),
    "einsum_lambda": (X, WB, WB),
    "decorated": (X, WB, WB),
    "through_a_local_name": (X, WB, WB),
}
QUIET_ARGS: dict[str, tuple[Any, ...]] = {
    "shared": (X, W, W),
    "one_shared": (X, WB, W),
    "nnx_shared": (X, W, W),
    "shared_keys": (X, X[0], X[0]),
    "closure": (X, WB, WB),
    "constant": (X, WB, WB),
    "default": (X, WB),
    "unmapped": (X[0], W, W),
}
# Flax linen's ``nn.vmap`` of a Module: its input (the parameters are made by ``init``).
LINEN_INVALID = {"linen_ensemble": X, "linen_params_on_axis_one": X, "linen_self_param": X}
LINEN_QUIET = {"linen_shared": X, "linen_input_unmapped": X[0]}


def cases(path: Path, policy: str | None = None) -> dict[str, Callable[..., Any]]:
    """The fixture's module-level functions, run with its no-batch-dims policies replaced by ``policy``."""
    source = path.read_text()
    if policy is not None:
        source = NO_BATCH_DIMS.sub(policy, source)
    namespace: dict[str, Any] = {"__name__": "fixture"}
    exec(compile(source, str(path), "exec"), namespace)
    return namespace


def residuals(fn: Callable[..., Any], args: tuple[Any, ...]) -> int:
    return len(saved_residuals(lambda *a: jnp.sum(fn(*a)), *args))


def module_residuals(module_class: Callable[[], Any], x: Any) -> int:
    """The residuals of a linen Module's loss, differentiated with respect to its parameters and input."""
    module = module_class()
    return residuals(module.apply, (module.init(jax.random.key(0), x), x))


def run(path: Path, name: str, policy: str | None = None) -> int:
    """The residuals a fixture case keeps (with its policies replaced by ``policy``)."""
    case = cases(path, policy)[name]
    if name in LINEN_INVALID or name in LINEN_QUIET:
        return module_residuals(case, {**LINEN_INVALID, **LINEN_QUIET}[name])
    return residuals(case, {**INVALID_ARGS, **QUIET_ARGS}[name])


@pytest.mark.parametrize("name", [*INVALID_ARGS, *LINEN_INVALID])
def test_under_vmap_of_every_argument_the_policy_keeps_what_nothing_saveable_keeps(name):
    kept = run(INVALID, name)
    assert kept == run(INVALID, name, "cp.nothing_saveable")
    assert kept < run(INVALID, name, "cp.dots_saveable")


@pytest.mark.parametrize("name", [*QUIET_ARGS, *LINEN_QUIET])
def test_with_an_unmapped_operand_the_policy_saves_the_product(name):
    kept = run(QUIET, name)
    dots = run(QUIET, name, "cp.dots_saveable")
    assert run(QUIET, name, "cp.nothing_saveable") < kept <= dots
    assert (kept == dots) == (name in ("shared", "nnx_shared", "shared_keys", "unmapped", "linen_shared"))


def test_names_saved_under_vmap_keep_the_products():
    """The message's other way out: a product named with ``checkpoint_name`` is saved (or offloaded)
    under vmap."""
    from jax.ad_checkpoint import checkpoint_name

    def block(x, w1, w2):
        return jnp.tanh(checkpoint_name(jnp.tanh(x @ w1), "h") @ w2)

    cp = jax.checkpoint_policies
    offload = cp.save_and_offload_only_these_names(
        names_which_can_be_saved=[], names_which_can_be_offloaded=["h"], offload_src="device", offload_dst="pinned_host"
    )
    nothing = residuals(jax.vmap(jax.checkpoint(block, policy=cp.nothing_saveable)), (X, WB, WB))
    for policy in (cp.save_only_these_names("h"), offload):
        assert residuals(jax.vmap(jax.checkpoint(block, policy=policy)), (X, WB, WB)) == nothing + 1


def test_the_message_states_the_measured_residuals():
    source = """
        import jax
        cp = jax.checkpoint_policies
        def f(x, w):
            return x @ w
        g = jax.vmap(jax.checkpoint(f, policy=cp.dots_with_no_batch_dims_saveable))
    """
    (finding,) = lint(textwrap.dedent(source), {"REM108"})
    assert (finding.start.row, finding.start.column) == (6, 38)
    assert "the same residuals as `nothing_saveable`" in finding.message
    assert "`dots_saveable`" in finding.message
