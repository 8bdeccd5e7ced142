"""The --trace driver's pure parts: worker environment, options from config, text of site reports."""

from __future__ import annotations

from remat_lint.config.settings import Settings
from remat_lint.trace.driver import dispatch as driver


def test_cpu_workers_keep_optimisation_barriers_and_keep_the_users_flags(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_dump_to=/tmp/dump")
    env = driver.worker_env(driver.TraceOptions(backend="cpu"))
    assert env["XLA_FLAGS"] == "--xla_dump_to=/tmp/dump --xla_disable_hlo_passes=cse_barrier_expander"
    assert env["JAX_PLATFORMS"] == "cpu"


def test_gpu_workers_get_the_platform_and_no_cpu_flag(monkeypatch):
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    env = driver.worker_env(driver.TraceOptions(backend="gpu"))
    assert env["JAX_PLATFORMS"] == "gpu" and "XLA_FLAGS" not in env


def test_options_come_from_flags_then_config():
    settings = Settings(trace={"timeout": 30, "backend": "cpu", "memory-limit-mb": 1024})
    options = driver.options_from(settings, None, None)
    assert (options.timeout, options.backend, options.memory_mb) == (30.0, "cpu", 1024)
    assert (
        driver.options_from(settings, 5, "tpu").timeout == 5
        and driver.options_from(settings, 5, "tpu").backend == "tpu"
    )


def test_crash_reasons():
    assert driver._crash_reason(-11, "") == "the worker crashed (SIGSEGV)"
    assert driver._crash_reason(1, "Traceback...\nModuleNotFoundError: No module named 'jax'\n") == (
        "the worker failed (exit 1): ModuleNotFoundError: No module named 'jax'"
    )


def test_site_report_text():
    report = {
        "line": 12,
        "residuals": [{"shape": "f32[16,64]", "dtype": "float32", "bytes": 4096, "source": "from the argument x"}],
        "policies": [
            {"policy": "none", "residual_bytes": 40960, "compiled": False},
            {
                "policy": "dots_saveable",
                "residual_bytes": 8192,
                "temp_bytes": 512,
                "flops": 12700000.0,
                "compiled": True,
            },
        ],
        "compile_note": "none: not compiled (no temp or FLOPs measured)",
        "recommendation": "policy=dots_saveable",
    }
    outcome = driver.TraceOutcome(sites=[driver.SiteReport("/nowhere/model.py", "loss(f32[16,64])", report)])
    assert driver.format_sites(outcome).splitlines() == [
        "/nowhere/model.py:12: checkpoint site (traced as loss(f32[16,64]))",
        "  residuals saved for the backward pass: 1",
        "    f32[16,64]       float32      4.0 KiB  from the argument x",
        "  policy                              residuals       temp        FLOPs",
        "  none                                 40.0 KiB            not compiled",
        "  dots_saveable                         8.0 KiB      512 B     1.27e+07",
        "  none: not compiled (no temp or FLOPs measured)",
        "  recommendation: policy=dots_saveable",
        "",
    ]


def test_site_report_paths_are_relative_to_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model = str(tmp_path / "pkg" / "model.py")
    report = {
        "line": 18,
        "residuals": [
            {
                "shape": "f32[16,64]",
                "dtype": "float32",
                "bytes": 4096,
                "source": f"output of add from {model}:23:11 (mlp_block)",
            },
            {
                "shape": "f32[16,64]",
                "dtype": "float32",
                "bytes": 4096,
                "source": "named 'h' from /elsewhere/lib.py:5:2 (f)",
            },
        ],
    }
    outcome = driver.TraceOutcome(sites=[driver.SiteReport(model, "loss(f32[16,64])", report)])
    assert driver.format_sites(outcome).splitlines()[:4] == [
        "pkg/model.py:18: checkpoint site (traced as loss(f32[16,64]))",
        "  residuals saved for the backward pass: 2",
        "    f32[16,64]       float32      4.0 KiB  output of add from pkg/model.py:23:11 (mlp_block)",
        "    f32[16,64]       float32      4.0 KiB  named 'h' from /elsewhere/lib.py:5:2 (f)",
    ]


def test_the_run_command_comes_from_the_flag_then_the_config():
    settings = Settings(trace={"run": "python -m pytest -q tests"})
    assert driver.options_from(settings, None, None).run == "python -m pytest -q tests"
    assert driver.options_from(settings, None, None, run="python train.py --steps 1").run == "python train.py --steps 1"
    assert driver.options_from(Settings(), None, None).run is None
