"""REM108 for Flax linen's ``nn.vmap``: how many residuals a checkpointed Module keeps under each
policy when ``nn.vmap`` maps it. Run as a script (CPU is enough: residuals do not depend on the
backend):

    JAX_PLATFORMS=cpu python tests/jax_claims/linen_vmap_residuals.py

It prints one table row per form and configuration (depth 2/4, width 16/64, batch 8);
docs/rem108-vmap-no-batch-dims.md has the results. Per policy: the residuals of the loss
(``saved_residuals``), and the ``dot_general`` equations of the program ``grad`` and
``value_and_grad`` trace (every product recomputed adds one: a policy that saves a product drops
its recomputation).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import flax.linen as nn
import jax
import jax.extend
import jax.numpy as jnp
from jax._src.ad_checkpoint import saved_residuals  # not public in jax 0.10.2

cp = jax.checkpoint_policies
POLICIES: dict[str, Any] = {
    "nothing": cp.nothing_saveable,
    "dots": cp.dots_saveable,
    "nbd": cp.dots_with_no_batch_dims_saveable,
    "nbd_alias": cp.checkpoint_dots_with_no_batch_dims,
    "nbd_offload": cp.offload_dot_with_no_batch_dims("device", "pinned_host"),
}
BATCH = 8
ENSEMBLE = {"variable_axes": {"params": 0}, "split_rngs": {"params": True}}
SHARED = {"variable_axes": {"params": None}, "split_rngs": {"params": False}}


class Block(nn.Module):
    """``depth`` tanh layers: ``nn.Dense`` (a bias), or ``self.param`` and ``@`` (none)."""

    depth: int
    width: int
    dense: bool = True

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for i in range(self.depth):
            if self.dense:
                x = nn.Dense(self.width)(x)
            else:
                x = x @ self.param(f"w{i}", nn.initializers.lecun_normal(), (x.shape[-1], self.width))
            x = jnp.tanh(x)
        return x


def remat_outside(policy: Any, depth: int, width: int, **vmap: Any) -> nn.Module:
    """``nn.vmap(nn.remat(Block, policy=P), ...)``."""
    return nn.vmap(nn.remat(Block, policy=policy), **vmap)(depth, width)


def remat_inside(policy: Any, depth: int, width: int, **vmap: Any) -> nn.Module:
    """``nn.vmap(Outer, ...)`` where ``Outer`` calls ``nn.remat(Block, policy=P)``."""

    class Outer(nn.Module):
        @nn.compact
        def __call__(self, x: jax.Array) -> jax.Array:
            return nn.remat(Block, policy=policy)(depth, width)(x)

    return nn.vmap(Outer, **vmap)()


def vmap_inside(policy: Any, depth: int, width: int, **vmap: Any) -> nn.Module:
    """``nn.remat(nn.vmap(Block, ...), policy=P)``."""
    return nn.remat(nn.vmap(Block, **vmap), policy=policy)(depth, width)


def self_param(policy: Any, depth: int, width: int, **vmap: Any) -> nn.Module:
    """``nn.vmap(nn.remat(Block, policy=P), ...)`` with ``self.param`` and ``@``."""
    return nn.vmap(nn.remat(Block, policy=policy), **vmap)(depth, width, dense=False)


@dataclass(frozen=True)
class Form:
    name: str
    build: Callable[..., nn.Module]
    vmap: dict[str, Any]


FORMS = [
    Form("remat in vmap, params on axis 0 (ensemble)", remat_outside, ENSEMBLE),
    Form("remat in vmap, params on axis 1", remat_outside, {**ENSEMBLE, "variable_axes": {"params": 1}}),
    Form("remat in vmap, self.param and @, params on axis 0", self_param, ENSEMBLE),
    Form("remat inside the vmapped Module, params on axis 0", remat_inside, ENSEMBLE),
    Form("vmap inside remat, params on axis 0", vmap_inside, ENSEMBLE),
    Form("remat in vmap, params shared (None)", remat_outside, SHARED),
    Form("remat inside the vmapped Module, params shared", remat_inside, SHARED),
    Form("vmap inside remat, params shared", vmap_inside, SHARED),
    Form(
        "remat in vmap, params on axis 0, input not mapped",
        remat_outside,
        {**ENSEMBLE, "in_axes": None, "axis_size": BATCH},
    ),
    Form("remat in vmap, no variable_axes", remat_outside, {}),
]


def loss_and_inputs(
    form: Form, policy: Any, depth: int, width: int
) -> tuple[Callable[..., jax.Array], tuple[Any, ...]]:
    model = form.build(policy, depth, width, **form.vmap)
    mapped = form.vmap.get("in_axes", 0) is not None
    x = jnp.ones((BATCH, 4, width) if mapped else (4, width))
    params = model.init(jax.random.key(0), x)
    return (lambda p, x: jnp.sum(model.apply(p, x))), (params, x)


def residuals(form: Form, policy: Any, depth: int, width: int) -> int:
    loss, args = loss_and_inputs(form, policy, depth, width)
    return len(saved_residuals(loss, *args))


def dot_generals(form: Form, policy: Any, depth: int, width: int, transform: Callable[..., Any]) -> int:
    loss, args = loss_and_inputs(form, policy, depth, width)
    return _count(jax.make_jaxpr(transform(loss))(*args).jaxpr, "dot_general")


def _count(jaxpr: Any, primitive: str) -> int:
    total = 0
    for eqn in jaxpr.eqns:
        total += eqn.primitive.name == primitive
        for sub in jax.extend.core.jaxprs_in_params(eqn.params):
            total += _count(sub, primitive)
    return total


def main() -> None:
    names = list(POLICIES)
    print(
        "| form | depth | width | residuals: "
        + " / ".join(names)
        + " | dot_generals under grad | under value_and_grad |"
    )
    print("|---|---|---|---|---|---|")
    for form, depth, width in itertools.product(FORMS, (2, 4), (16, 64)):
        try:
            kept = [residuals(form, POLICIES[p], depth, width) for p in names]
        except Exception as error:  # a form Flax refuses: its error is the measurement
            print(f"| {form.name} | {depth} | {width} | `init` raises {type(error).__name__} | | |")
            continue
        dots = [
            " / ".join(str(dot_generals(form, POLICIES[p], depth, width, transform)) for p in names)
            for transform in (jax.grad, jax.value_and_grad)
        ]
        print(f"| {form.name} | {depth} | {width} | " + " / ".join(map(str, kept)) + f" | {dots[0]} | {dots[1]} |")


if __name__ == "__main__":
    main()
