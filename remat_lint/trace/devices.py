"""Sharded programs: how many devices a differentiated program's inputs span.

A program whose inputs carry a sharding over several devices (a ``Mesh`` with ``NamedSharding``,
as ``jax.device_put`` or a sharded ``jit`` leaves them) compiles to one SPMD program per device.
Measured on XLA:CPU with ``--xla_force_host_platform_device_count=8`` (jax 0.10.2, a 4-layer MLP under
``jax.grad``, two sizes): ``cost_analysis()["flops"]`` is the per-device program's (data-parallel
over 2 and 8 devices: 1/2 and 1/8 of the single-device FLOPs, within 0.6 %), and
``memory_analysis().temp_size_in_bytes`` is one device's temp, not a share of the global one
(data-parallel over 8: 0.40x the single-device temp, not 0.125x; model-parallel over 2: 1.2x, the
gathered weights). Residual bytes read from the jaxpr are the global arrays'. What XLA:CPU cannot
show: the cost of the collectives on a real interconnect (it compiles them as host copies).
"""

from __future__ import annotations

from typing import Any

import jax


def device_count(value: Any) -> int:
    """The most devices any array of ``value`` (a pytree of ``ShapeDtypeStruct``) is sharded over."""
    counts = [
        len(sharding.device_set)
        for leaf in jax.tree_util.tree_leaves(value)
        if (sharding := getattr(leaf, "sharding", None)) is not None
    ]
    return max(counts, default=1)


def per_device_note(devices: int) -> str:
    """What a reader must know about the numbers of a program sharded over ``devices``."""
    return (
        f"temp and FLOPs are per device: the program's inputs are sharded over {devices} devices"
        " (collectives' cost on a real interconnect is not measured)"
    )
