"""The declaration --trace offers for a function it has no inputs for works when pasted: its shapes come
from the annotations and names, and the pasted comment traces the finding to a verdict."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("jax")
pytest.importorskip("jaxtyping")

ROOT = Path(__file__).resolve().parents[2]
# A float `labels` breaks the shape search (take_along_axis needs integer indices), so no inputs are found.
MODULE = textwrap.dedent(
    """\
    import jax
    import jax.numpy as jnp
    from jaxtyping import Array, Float


    def loss(x: Float[Array, "batch 16"], labels):
        h = jax.checkpoint(jnp.sin, policy="dots_saveable")(x)
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(h), labels[:, None], axis=1))
    """
)


def trace_of(path: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "remat_lint", "--trace", "--output-format", "json", path.name],
        capture_output=True,
        text=True,
        cwd=path.parent,
        timeout=600,
    )
    (finding,) = json.loads(proc.stdout)
    return finding["trace"]


def test_the_offered_declaration_traces_when_pasted(tmp_path: Path) -> None:
    module = tmp_path / "mod.py"
    module.write_text(MODULE)
    before = trace_of(module)
    assert before["status"] == "unconfirmed" and "no abstract inputs" in before["reason"]
    comment = re.search(r"^ *(# remat-lint: trace\(.*\))$", before["reason"], re.MULTILINE)
    assert comment is not None, before["reason"]
    assert comment.group(1) == "# remat-lint: trace(f32[8,16], i32[8])"
    module.write_text(MODULE.replace("def loss", f"{comment.group(1)}\ndef loss"))
    after = trace_of(module)
    assert after["status"] == "confirmed", after
    assert after["reason"].startswith("TypeError: 'str' object is not callable")
    assert after["reason"].endswith("[shapes declared in an inline comment]")
