"""--plot (trace/driver/plot.py): the trade-off picture of --memory-budget plans, and its CLI checks."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from remat_lint.cli.command import main

ROOT = Path(__file__).resolve().parents[2]


def report(fits: bool) -> dict[str, object]:
    today = {"temp_bytes": 41_000, "flops": 14.8e6}
    picked = {"temp_bytes": 21_000, "flops": 12.7e6}
    return {
        "budget": "0.5",
        "budget_bytes": 67_000 if fits else 10_000,
        "fits": fits,
        "today": today,
        "no_checkpoint": {"temp_bytes": 135_000, "flops": 12.6e6},
        ("chosen" if fits else "smallest"): picked,
        "considered": [[41_000, 14.8e6], [21_000, 12.7e6], [135_000, 12.6e6], [21_000, 14.7e6]],
        "front": [
            {**picked, "assignment": ["dots_saveable"]},
            {"temp_bytes": 135_000, "flops": 12.6e6, "assignment": ["none"]},
        ],
        "sites": [{"line": 18, "chosen": "dots_saveable"}],
        "site_options": [
            {
                "line": 18,
                "function": "mlp_block",
                "options": [
                    {"candidate": "as written", "residual_bytes": 544_768, **today},
                    {"candidate": "dots_saveable", "residual_bytes": 610_304, **picked},
                    {"candidate": "none", "residual_bytes": 971_264, "temp_bytes": 135_000, "flops": 12.6e6},
                ],
            }
        ],
    }


@pytest.mark.parametrize("fits", [True, False])
def test_svg_shows_front_today_choice_and_budget(tmp_path: Path, fits: bool) -> None:
    pytest.importorskip("matplotlib", reason="--plot needs the plot extra (matplotlib)")
    from remat_lint.trace.driver.plot import write

    out = tmp_path / "tradeoff.svg"
    write(
        [
            SimpleNamespace(target="loss(f32[16,64])", report=report(fits)),
            SimpleNamespace(target="step(f32[8])", report=report(True)),
        ],
        str(out),
    )
    svg = out.read_text(encoding="utf-8")
    for label in (
        "Pareto front (predicted)",
        "today (compiled)",
        "budget 0.5",
        "no checkpoint (compiled)",
        "assignments considered (predicted; 4 distinct points)",
        "loss(f32[16,64])",
        "step(f32[8])",
        "peak temp memory (KiB)",
        "residual bytes by candidate, one site changed at a time",
        "line 18: dots_saveable",
        "line 18: none",
    ):
        assert label in svg
    assert ("smallest found (compiled): nothing fits" in svg) == (not fits)


def test_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="--plot needs the plot extra (matplotlib)")
    from remat_lint.trace.driver.plot import write

    out = tmp_path / "tradeoff.png"
    write([SimpleNamespace(target="loss", report=report(True))], str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    demo = str(ROOT / "fixtures" / "demo")
    assert main(["--trace", "--plot", "out.svg", demo]) == 2
    assert "--plot needs --memory-budget" in capsys.readouterr().err
    assert main(["--trace", "--memory-budget", "0.5", "--plot", "out.pdf", demo]) == 2
    assert "--plot out.pdf: the file must end in .svg or .png" in capsys.readouterr().err


def test_long_titles_are_wrapped_not_cut_and_the_legend_is_outside_the_axes(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="--plot needs the plot extra (matplotlib)")
    from matplotlib import pyplot as plt

    from remat_lint.trace.driver import plot

    target = "train_step(" + ", ".join(f"f32[{n},{n}]" for n in range(100, 112)) + ")"
    shown: list[plt.Figure] = []
    real_close = plt.close
    plt.close = lambda fig: shown.append(fig)  # keep the figure to inspect it
    try:
        plot.write([SimpleNamespace(target=target, report=report(True))], str(tmp_path / "t.svg"))
    finally:
        plt.close = real_close
    trade_off = shown[0].axes[0]
    assert trade_off.get_title().replace("\n", " ") == target  # all of it, wrapped
    legend = trade_off.get_legend()
    renderer = shown[0].canvas.get_renderer()
    assert legend.get_window_extent(renderer).y1 <= trade_off.get_window_extent(renderer).y0  # below the axes
    names = {t.get_text() for t in trade_off.texts}
    assert {"today", "chosen", "no checkpoint"} <= names  # each marker named: coinciding points stay readable
    real_close(shown[0])


def test_plot_without_matplotlib_is_refused_before_tracing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    from remat_lint.trace.driver import dispatch as driver

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    monkeypatch.setattr(driver, "trace", lambda *a, **k: pytest.fail("traced before checking --plot"))
    assert main(["--trace", "--memory-budget", "0.5", "--plot", "out.svg", str(ROOT / "fixtures" / "demo")]) == 2
    assert "--plot needs matplotlib: pip install 'remat-lint[plot]'" in capsys.readouterr().err
