"""--trace on layouts and runs that used to break it: a package whose __init__ re-exports its layers,
a module that starts a child process, an unavailable backend, PRNG keys among the residuals, site
reports in JSON for sites no finding sits on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.trace_cases import LINEN_INIT, LINEN_LAYERS, LINEN_MODEL, ROOT, lint

pytest.importorskip("jax")


def test_a_module_of_a_package_that_re_exports_it_is_imported_parents_first(tmp_path: Path):
    pytest.importorskip("flax")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text(LINEN_INIT)
    (tmp_path / "pkg" / "layers.py").write_text(LINEN_LAYERS)
    (tmp_path / "pkg" / "model.py").write_text(LINEN_MODEL)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.remat-lint]\n[[tool.remat-lint.trace.targets]]\nmodule = "pkg.model:Model"\ninit_args = ["f32[4,16]"]\n'
    )
    proc = lint("--trace", "--output-format", "json", "pkg/layers.py", cwd=tmp_path)
    verdicts = {item["code"]: item["trace"] for item in json.loads(proc.stdout)}
    assert set(verdicts) == {"REM011", "REM202"}, proc.stderr
    for v in verdicts.values():
        assert v["status"] == "confirmed", v
        assert v["reason"].startswith("TracerBoolConversionError") and "(build: Model)" in v["reason"]


def test_the_processes_a_module_starts_end_with_its_worker(tmp_path: Path):
    pid_file = tmp_path / "child.pid"
    (tmp_path / "spawns.py").write_text(
        textwrap.dedent(
            f"""\
        import subprocess

        import jax

        child = subprocess.Popen(["sleep", "600"])
        open({str(pid_file)!r}, "w").write(str(child.pid))


        @jax.checkpoint
        def block(x):
            return x * 2
        """
        )
    )
    lint("--trace", "spawns.py", cwd=tmp_path)
    pid = int(pid_file.read_text())
    status = Path(f"/proc/{pid}/status")
    assert not status.exists() or "zombie" in status.read_text()


def test_an_unavailable_backend_is_one_clear_error(tmp_path: Path):
    (tmp_path / "m.py").write_text("import jax\n\nf = jax.checkpoint(lambda x: x, policy='dots_saveable')\n")
    probe = subprocess.run(
        [sys.executable, "-c", "import jax; jax.devices('tpu')"],
        capture_output=True,
        check=False,
        env={**os.environ, "JAX_PLATFORMS": "tpu"},
    )
    if probe.returncode == 0:
        pytest.skip("this machine has a TPU")
    proc = lint("--trace", "--backend", "tpu", "m.py", cwd=tmp_path)
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("remat-lint: configuration error: --backend tpu: JAX cannot start it here: RuntimeError:")


def test_a_prng_key_residual_has_its_dtype_and_bytes():
    script = textwrap.dedent(
        """\
        import jax
        from jax._src import core
        from remat_lint.trace.worker.residuals import _entry
        key = jax.eval_shape(lambda: jax.random.split(jax.random.key(0), 3))
        print(_entry(core.ShapedArray(key.shape, key.dtype), "an input"))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == "{'shape': 'key<fry>[3]', 'dtype': 'key<fry>', 'bytes': 24, 'source': 'an input'}"


def test_json_lists_every_site_report_of_the_module_on_its_findings(tmp_path: Path):
    (tmp_path / "two.py").write_text(
        textwrap.dedent(
            """\
        import jax
        import jax.numpy as jnp


        @jax.checkpoint
        def block(x):
            return jnp.sin(x @ x)


        helper = jax.checkpoint(lambda x: jnp.cos(x), policy="dots_saveable")


        # remat-lint: trace(f32[8,8])
        def loss(x):
            return jnp.sum(helper(block(x)))
        """
        )
    )
    proc = lint("--trace", "--output-format", "json", "two.py", cwd=tmp_path)
    (item,) = json.loads(proc.stdout)
    assert item["code"] == "REM001" and item["location"]["row"] == 10 and item["trace"]["status"] == "confirmed"
    (site,) = item["trace"]["sites"]  # `helper` raises under grad: only `block` gets a table
    assert site["line"] == 5 and site["function"] == "block" and site["recommendation"]
    assert [p["policy"] for p in site["policies"]][:2] == ["none", "nothing_saveable"]
