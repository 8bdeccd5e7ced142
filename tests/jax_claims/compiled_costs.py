"""Run one of this folder's cost scripts in a child Python with the optimization barriers kept
(``XLA_FLAGS`` must be set before JAX starts: XLA:CPU otherwise strips them, as GPU/TPU compilers
do not) and return the JSON it prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

KEEP_BARRIERS = "--xla_disable_hlo_passes=cse_barrier_expander"


def measured(script: str) -> Any:
    env = {**os.environ, "XLA_FLAGS": KEEP_BARRIERS, "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).with_name(script))],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)
