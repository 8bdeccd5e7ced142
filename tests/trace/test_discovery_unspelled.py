"""--trace-run discovers a checkpoint no spelling shows: applied through a registry, in modules where
the static pass sees no checkpoint site at all. Only a module whose code a recorded checkpoint ran is
judged (and imported)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from tests.trace_cases import lint

pytest.importorskip("jax")
PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider tests"

FILES = {
    "pyproject.toml": "[tool.remat-lint]\n",
    "pkg/__init__.py": "",
    # no call of a checkpoint anywhere: the static pass finds no site in either module
    "pkg/memory.py": """\
        import jax

        WRAPPERS = {"keep": lambda f: f, "recompute": jax.checkpoint}
        """,
    "pkg/model.py": """\
        import jax.numpy as jnp

        from pkg.memory import WRAPPERS

        CONFIG = {"activations": "recompute"}


        def mlp(ws, x):
            for w in ws:
                x = jnp.tanh(x @ w)
            return x


        forward = WRAPPERS[CONFIG["activations"]](mlp)


        def loss(ws, x, y):
            return jnp.mean((forward(ws, x) - y) ** 2)
        """,
    "pkg/script.py": """\
        from pathlib import Path

        Path(__file__).with_name("IMPORTED").touch()  # a script of the project: importing it runs it
        """,
    "tests/test_step.py": """\
        import jax
        import jax.numpy as jnp

        from pkg.model import loss


        def test_step():
            ws = [jnp.eye(128) for _ in range(4)]
            x = jnp.ones((64, 128))
            assert len(jax.grad(loss)(ws, x, x)) == 4
        """,
}


def test_a_checkpoint_a_registry_applies_is_found_where_no_site_is_spelled(tmp_path: Path):
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    static = lint("--no-cache", "--output-format", "json", "pkg", cwd=tmp_path)
    assert json.loads(static.stdout) == []
    proc = lint("--trace", "--trace-run", PYTEST, "--no-cache", "--output-format", "json", "pkg", cwd=tmp_path)
    found = [(f["code"], f["filename"], f["location"]["row"], f["trace"]["found_by"]) for f in json.loads(proc.stdout)]
    # the registry call that applies the checkpoint to 4 tanh layers before a squared error: it saves nothing
    assert found == [("REM401", "pkg/model.py", 14, "trace")], proc.stderr
    assert proc.returncode == 1
    assert not (tmp_path / "pkg" / "IMPORTED").exists()  # no recorded checkpoint ran its code: never imported
