"""--trace shows progress on a terminal (one stderr line: what, done/total, elapsed), never in
machine formats nor when stderr is not a terminal."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from remat_lint.cli.command import main
from remat_lint.trace.driver import dispatch as driver
from remat_lint.trace.driver.dispatch import TraceOptions, TraceOutcome
from remat_lint.trace.driver.progress import Progress


def test_progress_rewrites_one_line_with_the_elapsed_time(monkeypatch: pytest.MonkeyPatch) -> None:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    progress = Progress(True, started=0.0)
    monkeypatch.setattr("time.monotonic", lambda: 12.4)
    progress.show("--trace: 1/3 modules traced (last: a.py)", force=True)
    progress.show("--trace: 2/3 modules traced (last: b.py)")  # within a second: not redrawn
    progress.done()
    assert err.getvalue() == "\rremat-lint: --trace: 1/3 modules traced (last: a.py), 12 s\n"
    off = Progress(False)
    off.show("anything", force=True)
    off.done()
    assert err.getvalue().count("remat-lint") == 1


@pytest.mark.parametrize(("fmt", "shown"), [("full", True), ("concise", True), ("json", False), ("sarif", False)])
def test_progress_only_on_a_terminal_in_formats_for_people(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str, shown: bool
) -> None:
    (tmp_path / "model.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    seen: list[TraceOptions] = []
    monkeypatch.setattr(
        driver, "trace", lambda findings, files, settings, options: seen.append(options) or TraceOutcome()
    )
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    main(["--trace", "--no-cache", "--output-format", fmt, "model.py"])
    assert seen[0].progress is shown
