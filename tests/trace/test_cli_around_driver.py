"""What ``--trace`` does in the CLI around the trace driver: notebooks left out with a warning, the
folder's ``[tool.remat-lint.trace]`` table read, and ``--memory-budget`` plans printed. The driver's
``trace`` is replaced by a stand-in (no worker, no JAX compile), so the CLI runs in this process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remat_lint.cli.command import main
from remat_lint.trace.driver import dispatch as driver
from remat_lint.trace.driver.dispatch import SiteReport, TraceOptions, TraceOutcome

NOTEBOOK = {
    "cells": [{"cell_type": "code", "metadata": {}, "source": ["x = 1\n"], "outputs": [], "execution_count": None}],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}

PLAN = {
    "budget": "0.5",
    "budget_bytes": 67_000,
    "fits": True,
    "compiles": 3,
    "candidates": 4,
    "today": {"temp_bytes": 41_000, "flops": 14.8e6},
    "chosen": {"temp_bytes": 21_000, "flops": 12.7e6},
    "no_checkpoint": {"temp_bytes": 135_000, "flops": 12.6e6},
    "sites": [
        {
            "line": 18,
            "function": "mlp_block",
            "today": "as written",
            "chosen": "dots_saveable",
            "residual_bytes_saved": 0,
            "flops_added": 0,
        }
    ],
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.remat-lint.trace]\ntimeout = 7\n")
    (tmp_path / "model.py").write_text("x = 1\n")
    (tmp_path / "cells.ipynb").write_text(json.dumps(NOTEBOOK))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def fake_trace(seen: dict[str, object], outcome: TraceOutcome):
    def trace(findings: list[object], files: list[str], settings: object, options: TraceOptions) -> TraceOutcome:
        seen.update(files=files, options=options)
        return outcome

    return trace


def test_trace_leaves_notebooks_out_and_reads_the_folders_trace_table(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: dict[str, object] = {}
    monkeypatch.setattr(driver, "trace", fake_trace(seen, TraceOutcome()))
    assert main(["--trace", "--no-cache", "model.py", "cells.ipynb"]) == 0
    assert "notebooks are not traced (their findings are static only): cells.ipynb" in capsys.readouterr().err
    assert seen["files"] == ["model.py"]
    assert isinstance(seen["options"], TraceOptions) and seen["options"].timeout == 7.0


def test_trace_prints_the_memory_budget_plans(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = TraceOutcome(budgets=[SiteReport(str(project / "model.py"), "loss", PLAN)])
    monkeypatch.setattr(driver, "trace", fake_trace({}, outcome))
    assert main(["--trace", "--no-cache", "model.py"]) == 0
    out = capsys.readouterr().out
    assert "model.py: --memory-budget 0.5 for loss:" in out
    assert "dots_saveable" in out and "3 programs compiled for 4 candidates over 1 site(s)" in out


def test_plot_says_which_file_it_wrote(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from remat_lint.trace.driver import plot

    written: list[str] = []
    monkeypatch.setattr(plot, "write", lambda plans, path: written.append(path))
    outcome = TraceOutcome(budgets=[SiteReport(str(project / "model.py"), "loss", PLAN)])
    monkeypatch.setattr(driver, "trace", fake_trace({}, outcome))
    main(["--trace", "--no-cache", "--memory-budget", "0.5", "--plot", "out.svg", "model.py"])
    assert written == ["out.svg"]
    assert "remat-lint: wrote out.svg" in capsys.readouterr().err
