"""--trace-run on a program sharded over a mesh (8 CPU devices, ``--xla_force_host_platform_device_count``):
its compiled costs are per device, and the verdict and site table say so (trace/devices.py)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.trace_cases import lint

pytest.importorskip("jax")

# A data-parallel MLP: the batch is sharded over every device, the weights replicated. Its
# checkpoint keeps everything (REM104), a cost finding judged on the recorded grad.
MODEL = textwrap.dedent(
    """\
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec


    def mlp(ws, x):
        for w in ws:
            x = jax.checkpoint(lambda y, w=w: jnp.tanh(y @ w), policy=jax.checkpoint_policies.everything_saveable)(x)
        return jnp.mean(x**2)


    mesh = Mesh(np.array(jax.devices()), ("data",))
    x = jax.device_put(jnp.ones((256, 128)), NamedSharding(mesh, PartitionSpec("data")))
    ws = [jax.device_put(jnp.ones((128, 128)) / 128, NamedSharding(mesh, PartitionSpec())) for _ in range(3)]
    jax.grad(mlp)(ws, x)
    """
)


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, devices: int, *output: str) -> Any:
    (tmp_path / "model.py").write_text(MODEL)
    monkeypatch.setenv("XLA_FLAGS", f"--xla_force_host_platform_device_count={devices}")
    return lint("--trace", "--no-cache", "--trace-run", f"{sys.executable} model.py", *output, "model.py", cwd=tmp_path)


def test_a_sharded_programs_costs_are_per_device_and_say_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    [one] = json.loads(_run(tmp_path, monkeypatch, 1, "--output-format", "json").stdout)
    [eight] = json.loads(_run(tmp_path, monkeypatch, 8, "--output-format", "json").stdout)
    assert one["trace"]["status"] == eight["trace"]["status"] == "confirmed", (one["trace"], eight["trace"])
    note = "temp and FLOPs are per device: the program's inputs are sharded over 8 devices"
    assert note in eight["trace"]["reason"] and "per device" not in one["trace"]["reason"]
    assert eight["trace"]["evidence"]["devices"] == 8 and "devices" not in one["trace"]["evidence"]
    # measured: the per-device program of an 8-way data-parallel grad has 1/8 of the FLOPs (within 1 %)
    ratio = one["trace"]["evidence"]["as_written"]["flops"] / eight["trace"]["evidence"]["as_written"]["flops"]
    assert 7.9 < ratio < 8.1, ratio
    text = _run(tmp_path, monkeypatch, 8).stdout
    assert (
        f"  {note} (collectives' cost on a real interconnect is not measured); residuals are the global arrays" in text
    )
