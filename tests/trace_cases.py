"""Source shared by the --trace tests: running remat-lint on a project, and the Flax linen layer
whose `nn.remat(Block, static_argnums=(1,))` leaves `deterministic` traced (REM011 and REM202 both
predict its TracerBoolConversionError at `init`)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

LINEN_LAYERS = textwrap.dedent(
    """\
    import flax.linen as nn


    class Block(nn.Module):
        @nn.compact
        def __call__(self, x, deterministic):
            h = nn.Dense(16)(x)
            if not deterministic:
                h = nn.Dropout(0.1)(h, deterministic=False)
            return nn.gelu(h) + x


    RematBlock = nn.remat(Block, static_argnums=(1,))
    """
)
# A model over it, imported by a package whose __init__ re-exports both.
LINEN_MODEL = textwrap.dedent(
    """\
    import flax.linen as nn

    from pkg.layers import RematBlock


    class Model(nn.Module):
        @nn.compact
        def __call__(self, x, deterministic=True):
            return nn.Dense(1)(RematBlock()(x, deterministic))
    """
)
LINEN_INIT = "from pkg.layers import Block\nfrom pkg.model import Model\n"


def lint(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``remat-lint ARGS`` in ``cwd``, this checkout's remat_lint first on the path."""
    return subprocess.run(
        [sys.executable, "-m", "remat_lint", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
