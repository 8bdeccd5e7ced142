"""``remat-lint --trace`` end to end: the demo, every way a worker can fail (the run goes on), the
exit code with refuted findings, and the JSON ``trace`` object."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("jax")

ROOT = Path(__file__).resolve().parents[2]
BAD_POLICY = textwrap.dedent(
    """\
    from functools import partial

    import jax
    import jax.numpy as jnp


    # remat-lint: trace(f32[8,8])
    @partial(jax.checkpoint, policy="dots_saveable")
    def block(x):
        return jnp.sin(x @ x)
    """
)


def lint(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "remat_lint", *args], capture_output=True, text=True, cwd=cwd, timeout=600
    )


def traces(proc: subprocess.CompletedProcess[str]) -> dict[str, dict]:
    return {Path(item["filename"]).name: item["trace"] for item in json.loads(proc.stdout)}


def test_demo_confirms_every_finding_and_reports_the_sites():
    proc = lint("--trace", "fixtures/demo")
    assert proc.returncode == 1, proc.stderr
    verdicts = re.findall(r"= trace: (\w+): (.*)", proc.stdout)
    assert [status for status, _ in verdicts] == ["confirmed"] * 6, verdicts
    reasons = " | ".join(reason for _, reason in verdicts)
    assert "TypeError: 'str' object is not callable" in reasons  # REM001
    assert "no `named 'hiden'`" in reasons  # REM008
    assert "TracerBoolConversionError" in reasons  # REM010
    assert "never in 2 compiled calls" in reasons  # REM201
    assert "runs twice per step under grad" in reasons  # REM203
    assert "removing it saves FLOPs" in reasons  # REM101 (compiled costs)
    assert "checkpoint site (traced as loss(" in proc.stdout and "recommendation:" in proc.stdout
    assert "XLA_FLAGS=--xla_disable_hlo_passes=cse_barrier_expander: 6 confirmed" in proc.stderr


def test_worker_failures_leave_findings_unconfirmed_and_the_run_goes_on(tmp_path: Path):
    (tmp_path / "broken_import.py").write_text("import not_a_module_for_remat_lint\n" + BAD_POLICY)
    (tmp_path / "crash.py").write_text(BAD_POLICY + "\nimport os\nos.abort()\n")
    (tmp_path / "fine.py").write_text(BAD_POLICY)
    no_inputs = BAD_POLICY.replace("# remat-lint: trace(f32[8,8])\n", "").replace("def block(x):", "def block(params):")
    (tmp_path / "no_inputs.py").write_text(no_inputs.replace("jnp.sin(x @ x)", 'params["w"] @ params["w"]'))
    proc = lint("--trace", "--output-format", "json", ".", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    got = traces(proc)
    assert got["broken_import.py"]["status"] == "unconfirmed"
    assert got["broken_import.py"]["reason"].startswith(
        "importing the module fails: ModuleNotFoundError: No module named 'not_a_module_for_remat_lint'"
    )
    assert got["crash.py"] == {"status": "unconfirmed", "evidence": None, "reason": "the worker crashed (SIGABRT)"}
    assert got["fine.py"]["status"] == "confirmed"
    assert got["no_inputs.py"]["status"] == "unconfirmed"
    # a parameter dict has no shape string: --trace-run is offered, not a declaration that fails when pasted
    assert (
        "--trace-run" in got["no_inputs.py"]["reason"] and "# remat-lint: trace(" not in got["no_inputs.py"]["reason"]
    )
    assert "`params`: a pytree" in got["no_inputs.py"]["reason"]


def test_a_hanging_module_times_out(tmp_path: Path):
    (tmp_path / "hang.py").write_text(BAD_POLICY + "\nimport time\ntime.sleep(600)\n")
    proc = lint("--trace", "--trace-timeout", "3", "--output-format", "json", "hang.py", cwd=tmp_path)
    assert traces(proc)["hang.py"]["reason"] == "timed out after 3 s (raise --trace-timeout)"


def test_a_worker_over_the_memory_cap_is_stopped(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[tool.remat-lint.trace]\nmemory-limit-mb = 40\n")
    (tmp_path / "big.py").write_text(BAD_POLICY)
    proc = lint("--trace", "--output-format", "json", "big.py", cwd=tmp_path)
    reason = traces(proc)["big.py"]["reason"]
    assert reason.startswith("the worker exceeded the memory cap") and "> 40 MiB" in reason


def test_refuted_findings_do_not_count_in_the_exit_code(tmp_path: Path):
    # Another module of the project turns on jax_remat3, under which JAX does honour
    # static_argnames: the static pass cannot see that (a module that names the flag itself is
    # not reported at all), the trace can.
    (tmp_path / "settings.py").write_text('import jax\n\njax.config.update("jax_remat3", True)\n')
    (tmp_path / "remat3.py").write_text(
        textwrap.dedent(
            """\
        from functools import partial

        import jax
        import jax.numpy as jnp

        import settings  # noqa: F401


        # remat-lint: trace(f32[8,8], train=True)
        @partial(jax.checkpoint, static_argnames="train")
        def block(x, train):
            if train:
                x = x * 0.9
            return jnp.sin(x @ x)
        """
        )
    )
    assert lint("remat3.py", cwd=tmp_path).returncode == 1
    proc = lint("--trace", "remat3.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "= trace: refuted: jax_remat3 is on" in proc.stdout
    assert "1 refuted (refuted findings do not count in the exit code)" in proc.stderr


def test_trace_needs_files():
    proc = subprocess.run(
        [sys.executable, "-m", "remat_lint", "--trace", "-"], input="x = 1\n", capture_output=True, text=True, cwd=ROOT
    )
    assert proc.returncode == 2 and "--trace needs files" in proc.stderr


FLAX = textwrap.dedent(
    """\
    import flax.linen as nn
    import jax


    class Block(nn.Module):
        features: int

        @nn.compact
        def __call__(self, x):
            jax.debug.print("block {}", x.sum())
            return nn.gelu(nn.Dense(self.features)(x))


    class MLP(nn.Module):
        features: int = 16

        @nn.compact
        def __call__(self, x):
            return nn.remat(Block)(self.features)(x).sum()


    class Broken(nn.Module):
        def setup(self):
            self.block = nn.remat(Block(16))

        def __call__(self, x):
            return self.block(x).sum()
    """
)
FLAX_TARGETS = textwrap.dedent(
    """\
    [tool.remat-lint.trace]
    [[tool.remat-lint.trace.targets]]
    module = "net:MLP"
    module_args = {features = 16}
    init_args = ["f32[4,16]"]

    [[tool.remat-lint.trace.targets]]
    module = "net:Broken"
    init_args = ["f32[4,16]"]
    """
)


def test_flax_targets_are_initialised_abstractly(tmp_path: Path):
    pytest.importorskip("flax")
    (tmp_path / "net.py").write_text(FLAX)
    (tmp_path / "pyproject.toml").write_text(FLAX_TARGETS)
    proc = lint("--trace", "--output-format", "json", "net.py", cwd=tmp_path)
    got = {item["code"]: item["trace"] for item in json.loads(proc.stdout)}
    assert got["REM004"]["status"] == "confirmed"
    assert got["REM004"]["evidence"]["exception"].startswith("TransformTargetError: Linen transformations must be")
    assert got["REM004"]["evidence"]["stage"] == "build"  # abstract init of Broken
    assert got["REM203"]["status"] == "confirmed"
    assert "under grad of MLP.apply(" in got["REM203"]["reason"]
    # a configured target that cannot be built is reported, not dropped
    assert "net.py: target Broken failed at build: TransformTargetError: Linen transformations must be" in proc.stderr


def test_a_target_in_another_module_of_a_src_layout_reaches_the_finding(tmp_path: Path):
    pkg = tmp_path / "src" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "model.py").write_text(BAD_POLICY.replace("# remat-lint: trace(f32[8,8])\n", ""))
    (pkg / "train.py").write_text(
        "import jax.numpy as jnp\n\nfrom pkg.model import block\n\n\ndef loss(x):\n    return jnp.mean(block(x) ** 2)\n"
    )
    (tmp_path / "pyproject.toml").write_text(
        '[tool.remat-lint]\n[[tool.remat-lint.trace.targets]]\nfunction = "pkg.train:loss"\nargs = ["f32[4,4]"]\n'
    )
    proc = lint("--trace", "--output-format", "json", ".", cwd=tmp_path)
    assert traces(proc)["model.py"]["reason"] == (
        "TypeError: 'str' object is not callable (grad: grad of loss(f32[4,4])) [shapes declared in pyproject.toml]"
    )


def test_json_carries_the_site_report_on_findings_at_the_site(tmp_path: Path):
    (tmp_path / "saves_all.py").write_text(
        BAD_POLICY.replace('policy="dots_saveable"', "policy=jax.checkpoint_policies.everything_saveable")
    )
    proc = lint("--trace", "--select", "REM104", "--output-format", "json-lines", "saves_all.py", cwd=tmp_path)
    (item,) = [json.loads(line) for line in proc.stdout.splitlines()]
    site = item["trace"]["evidence"]["site"]
    assert site["line"] == item["location"]["row"] == 8
    assert [p["policy"] for p in site["policies"]] == [
        "none",
        "nothing_saveable",
        "dots_with_no_batch_dims_saveable",
        "dots_saveable",
        "everything_saveable",
    ]
