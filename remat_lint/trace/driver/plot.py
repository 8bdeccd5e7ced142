"""``--plot FILE.svg|png``: the memory/recompute trade-off of each ``--memory-budget`` plan as a picture.

Two panels per planned program: every assignment the search considered (predicted peak temp and
FLOPs), their Pareto front, today's program, the chosen one and the program with no checkpoint
(compiled), and the budget as a vertical line; then, per site, the residual bytes each candidate
keeps for the backward pass (from the jaxpr), the chosen one marked. matplotlib is an optional extra (``pip install 'remat-lint[plot]'``),
imported only here.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

SUFFIXES = (".svg", ".png")


class PlotUnavailable(Exception):
    """matplotlib is not installed."""


def require() -> None:
    """Raise PlotUnavailable unless matplotlib can be imported: checked before tracing, which takes minutes."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        raise PlotUnavailable("--plot needs matplotlib: pip install 'remat-lint[plot]'")


def write(plans: Sequence[Any], path: str) -> None:
    """Draw ``plans`` (the driver's reports: ``target``, ``report``) into ``path`` (.svg or .png)."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: no display needed
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise PlotUnavailable("--plot needs matplotlib: pip install 'remat-lint[plot]'") from exc
    plt.rcParams["svg.fonttype"] = "none"  # SVG text stays text (searchable, selectable)
    rows = len(plans)
    fig, axes = plt.subplots(rows, 2, figsize=(12.8, 5.6 * rows), squeeze=False)
    for (trade_off, residuals), plan in zip(axes, plans, strict=True):
        _panel(trade_off, plan.target, plan.report)
        _residuals(residuals, plan.report)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _panel(ax: Any, target: str, rep: dict[str, Any]) -> None:
    unit, scale = _unit(
        max(
            [
                rep["no_checkpoint"]["temp_bytes"],
                rep["today"]["temp_bytes"],
                rep["budget_bytes"],
                *(t for t, _ in rep["considered"]),
            ]
        )
    )
    gflop = 1e9 if rep["today"]["flops"] >= 1e9 else 1e6
    flop_unit = "GFLOP" if gflop == 1e9 else "MFLOP"

    def xy(costs: dict[str, Any]) -> tuple[float, float]:
        return costs["temp_bytes"] / scale, costs["flops"] / gflop

    if rep["considered"]:
        xs = [t / scale for t, _ in rep["considered"]]
        ys = [f / gflop for _, f in rep["considered"]]
        ax.scatter(
            xs, ys, s=14, color="0.7", label=f"assignments considered (predicted; {len(xs)} distinct points)", zorder=1
        )
    front = [xy(p) for p in rep["front"]]
    if front:
        fx, fy = [x for x, _ in front], [y for _, y in front]
        ax.step(fx, fy, where="post", color="tab:blue", lw=1.5, label="Pareto front (predicted)", zorder=2)
        ax.scatter(fx, fy, s=22, color="tab:blue", zorder=3)
    budget = f"budget {rep['budget']} ({rep['budget_bytes'] / scale:.1f} {unit})"
    ax.axvline(rep["budget_bytes"] / scale, color="tab:red", ls="--", lw=1.2, label=budget, zorder=2)
    picked = rep.get("chosen") or rep.get("smallest")
    label = "chosen (compiled)" if rep["fits"] else "smallest found (compiled): nothing fits"
    marked = [  # drawn small last over big first, and each named beside it: coinciding points stay visible
        (
            rep["no_checkpoint"],
            {"marker": "s", "s": 150, "color": "0.3"},
            "no checkpoint (compiled)",
            "no checkpoint",
            (8, -12),
        ),
        (
            rep["today"],
            {"marker": "o", "s": 90, "facecolor": "none", "edgecolor": "black", "lw": 1.8},
            "today (compiled)",
            "today",
            (8, 6),
        ),
        (
            picked,
            {"marker": "*", "s": 120, "color": "tab:green" if rep["fits"] else "tab:orange"},
            label,
            "chosen",
            (-8, 10),
        ),
    ]
    for zorder, (costs, style, legend, name, offset) in enumerate(marked, start=4):
        ax.scatter(*xy(costs), label=legend, zorder=zorder, **style)
        ax.annotate(
            name,
            xy(costs),
            xytext=offset,
            textcoords="offset points",
            fontsize=7,
            ha="right" if offset[0] < 0 else "left",
            zorder=zorder,
        )
    ax.set_xlabel(f"peak temp memory ({unit})")
    ax.set_ylabel(f"FLOPs ({flop_unit}, value_and_grad)")
    ax.set_title(textwrap.fill(target, 80), fontsize=9)  # wrapped, never cut
    ax.grid(True, alpha=0.3)
    # below the axes: a legend inside may cover the markers it explains
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)


def _residuals(ax: Any, rep: dict[str, Any]) -> None:
    """Per site, one bar per candidate: the residual bytes of the program with that site changed."""
    chosen = [s["chosen"] for s in rep["sites"]]
    labels, values, colors = [], [], []
    for i, site in enumerate(rep.get("site_options", [])):
        where = f"line {site['line']}" if site["line"] is not None else site["function"]
        for option in site["options"]:
            labels.append(f"{where}: {option['candidate']}")
            values.append(option["residual_bytes"])
            colors.append("tab:green" if i < len(chosen) and option["candidate"] == chosen[i] else "0.6")
    unit, scale = _unit(max(values, default=1))
    ax.barh(range(len(values)), [v / scale for v in values], color=colors)
    ax.set_yticks(range(len(values)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel(f"residuals kept for the backward pass ({unit}; chosen in green)")
    ax.set_title("the program's residual bytes by candidate, one site changed at a time", fontsize=9)
    ax.grid(True, axis="x", alpha=0.3)


def _unit(largest: float) -> tuple[str, float]:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if largest >= scale:
            return unit, scale
    return "B", 1
