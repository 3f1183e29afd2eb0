"""Figures in the papers' own forms, drawn with matplotlib (Agg, no display).

Each function takes analysis results and returns a Figure, or None when the
run has nothing of that shape (no latency samples, fewer than two cells...).
The caller saves it as PNG and SVG and embeds it in the HTML report.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # a report is rendered on servers without a display

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from layerbench.analysis.overhead import CellResult
from layerbench.analysis.scaling import Scaling
from layerbench.spec.models import StackSpec
from layerbench.store.read import StoredCell

STYLE = {
    "figure.dpi": 110,
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.grid.axis": "y",
    "grid.alpha": 0.3,
}
PALETTE = plt.get_cmap("tab20").colors


def normalized_bars(results: list[CellResult]) -> Figure | None:
    """One group of bars per workload: each stack's mean over the baseline, with the ratio's 95% CI."""
    workloads = list(dict.fromkeys(r.workload for r in results))
    stacks = list(dict.fromkeys(r.stack_label for r in results))
    if len(stacks) < 2:
        return None
    with plt.rc_context(STYLE):
        size = (max(8, min(14, 2 + 0.25 * len(workloads) * len(stacks))), 4.2)
        fig, ax = plt.subplots(figsize=size, layout="constrained")  # room for a legend of long stack labels
        width = 0.8 / len(stacks)
        for i, stack in enumerate(stacks):
            rows = {r.workload: r for r in results if r.stack_label == stack}
            ratios = [1.0 if w in rows and rows[w].is_baseline else _nan(rows.get(w)) for w in workloads]
            lo, hi = _errors(rows, workloads, ratios)
            x = np.arange(len(workloads)) + (i - (len(stacks) - 1) / 2) * width
            ax.bar(x, ratios, width, label=stack, color=PALETTE[i % 20], yerr=[lo, hi], capsize=2, ecolor="0.3")
        ax.axhline(1.0, color="0.2", lw=0.8, ls="--")
        ax.set_yscale("log")  # ×2 and ×0.5 are equally far from the baseline
        times = matplotlib.ticker.FuncFormatter(lambda v, _: f"×{v:g}")
        ax.yaxis.set_major_formatter(times)
        ax.yaxis.set_minor_formatter(times)  # within one decade only minor ticks are labelled
        ax.set_xticks(np.arange(len(workloads)), workloads)
        ax.set_ylabel("ratio to the baseline, paired by round (log)")
        ax.set_title("Each layer relative to the baseline (error bars: 95% CI of the ratio)")
        longest = max(len(s) for s in stacks)
        ncols = 3 if longest < 40 else 2 if longest < 60 else 1  # database stacks have long labels
        ax.legend(fontsize=7, ncols=ncols, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.08))
    return fig


def _nan(r: CellResult | None) -> float:
    return r.ratio.ratio if r is not None else float("nan")


def _errors(rows: dict[str, CellResult], workloads: list[str], ratios: list[float]) -> tuple[list[float], list[float]]:
    lo, hi = [], []
    for w, value in zip(workloads, ratios, strict=True):
        r = rows.get(w)
        ok = r is not None and not r.is_baseline and r.ratio.ci_low == r.ratio.ci_low
        lo.append(value - r.ratio.ci_low if ok else 0.0)
        hi.append(r.ratio.ci_high - value if ok else 0.0)
    return lo, hi


def latency_breakdown(frame: pd.DataFrame) -> Figure | None:
    """Submission (slat) and completion (clat) latency per cell, as in the paper's Fig. 4."""
    rows = frame[frame["metric"].isin(["slat_mean", "clat_mean"])]
    if rows.empty:
        return None
    means = rows.groupby(["workload", "stack_label", "metric"])["value"].mean().unstack("metric").fillna(0) / 1000
    workloads = list(dict.fromkeys(frame["workload"]))
    stacks = list(dict.fromkeys(frame["stack_label"]))[::-1]  # top to bottom in the run's order
    height = 0.24 * len(stacks) + 1.4
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(workloads), figsize=(2.4 * len(workloads) + 3, height), squeeze=False)
        for i, (ax, w) in enumerate(zip(axes[0], workloads, strict=True)):
            part = means.loc[w].reindex(stacks).fillna(0)
            y = np.arange(len(part))
            slat, clat = part.get("slat_mean", 0 * y), part.get("clat_mean", 0 * y)
            ax.barh(y, slat, color=PALETTE[2], label="submission (slat)")
            ax.barh(y, clat, left=slat, color=PALETTE[0], label="completion (clat)")
            ax.set_yticks(y, stacks if i == 0 else [""] * len(y), fontsize=7)
            ax.set_title(w)
            ax.set_xlabel("mean latency (µs)")
            ax.grid(axis="x", alpha=0.3)
            ax.grid(axis="y", visible=False)
        axes[0][-1].legend(fontsize=7, frameon=False, loc="lower right")
        fig.suptitle("Where the time goes: submission vs completion latency")
        fig.tight_layout()
    return fig


def percentile_profile(pct: pd.DataFrame, cells: Sequence[StoredCell]) -> Figure | None:
    """Completion-latency percentiles per cell (log scale), from histograms merged over jobs and trials."""
    if pct.empty:
        return None
    names = [c for c in ("p50", "p90", "p95", "p99", "p99.9") if c in pct.columns]
    label = {c.cell_id: (c.workload, c.stack_label) for c in cells}
    pct = pct[pct["cell_id"].isin(label)]
    workloads = list(dict.fromkeys(label[c][0] for c in pct["cell_id"]))
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(workloads), figsize=(3.4 * len(workloads) + 2, 3.6), squeeze=False)
        for ax, w in zip(axes[0], workloads, strict=True):
            mine = [row for row in pct.to_dict("records") if label[row["cell_id"]][0] == w]
            for i, row in enumerate(mine):
                values = [row[n] / 1000 for n in names]
                tag = label[row["cell_id"]][1] + ("" if row["direction"] == "read" else f" ({row['direction']})")
                ax.plot(range(len(names)), values, marker="o", ms=3, color=PALETTE[i % 20], label=tag)
            ax.set_xticks(range(len(names)), names)
            ax.set_yscale("log")
            ax.set_title(w)
            ax.set_ylabel("completion latency (µs)")
        axes[0][-1].legend(fontsize=6, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        fig.suptitle("Latency percentiles (fio histograms merged over jobs and trials)")
        fig.tight_layout()
    return fig


def surfaces(
    results: Sequence[CellResult],
    cells: Sequence[StoredCell],
    points: pd.DataFrame | None = None,
    x: str = "bs",
    y: str = "size",
) -> Figure | None:
    """Seed 004's surfaces: per operation (row) and layer (column), the ratio to the baseline over
    file size (y) x record size (x). For fio workloads swept over both, and IOzone's own (``points``:
    analysis.surface.iozone_points)."""
    by_id = {c.cell_id: c for c in cells}
    rows = [
        {"op": p.op, "layer": _layer(by_id[p.cell_id].stack), x: p.record, y: p.size, "ratio": p.ratio}
        for p in (points if points is not None else pd.DataFrame()).itertuples(index=False)
    ]
    for r in results:
        c = by_id[r.cell_id]
        if r.is_baseline or r.ratio.ratio != r.ratio.ratio or not c.point.values:
            continue
        w, layer = c.cell.workload, _layer(c.stack)
        rows.append({"op": c.operation, "layer": layer, x: getattr(w, x), y: getattr(w, y), "ratio": r.ratio.ratio})
    if not rows:
        return None
    data = pd.DataFrame(rows)
    if data[x].nunique() < 2 or data[y].nunique() < 2:
        return None  # one axis only: a surface needs two
    ops, layers = list(dict.fromkeys(data["op"])), sorted(dict.fromkeys(data["layer"]))
    with plt.rc_context({**STYLE, "axes.grid": False}):
        fig, axes = plt.subplots(
            len(ops), len(layers), figsize=(2.3 * len(layers) + 1, 1.9 * len(ops) + 0.6), squeeze=False
        )
        for i, op in enumerate(ops):
            for j, layer in enumerate(layers):
                ax = axes[i][j]
                grid = data[(data["op"] == op) & (data["layer"] == layer)].pivot_table(
                    index=y, columns=x, values="ratio"
                )
                ax.imshow(np.log2(grid.values), cmap="RdBu", vmin=-1, vmax=1, aspect="auto")
                for (a, b), v in np.ndenumerate(grid.values):
                    ax.text(b, a, f"{v:.2f}", ha="center", va="center", fontsize=7)
                ax.set_xticks(range(len(grid.columns)), [_size(v) for v in grid.columns], fontsize=7)
                ax.set_yticks(range(len(grid.index)), [_size(v) for v in grid.index], fontsize=7)
                ax.set_title(f"{op} · {layer}" if i == 0 else op, fontsize=8)
                if j == 0:
                    ax.set_ylabel("file size")
                if i == len(ops) - 1:
                    ax.set_xlabel("record size")
        fig.suptitle("Ratio to the baseline over file size x record size (blue: faster, red: slower)")
        fig.tight_layout()
    return fig


def scaling_curves(scalings: list[Scaling]) -> Figure | None:
    """Seed 000's Fig. 6-7: per group, aggregate throughput (95% CI) and p99 latency over the instance count,
    beside what the host gave (CPU, I/O wait, the device, memory against the limit)."""
    if not scalings:
        return None
    with plt.rc_context(STYLE):
        # constrained layout: tight_layout cannot place twin axes and says so
        fig, axes = plt.subplots(
            len(scalings), 2, figsize=(11, 3.2 * len(scalings)), squeeze=False, layout="constrained"
        )
        for row, sc in zip(axes, scalings, strict=True):
            _throughput_panel(row[0], sc)
            _usage_panel(row[1], sc)
    return fig


def _throughput_panel(ax: plt.Axes, sc: Scaling) -> None:
    n = [p.instances for p in sc.points]
    mean = [p.throughput.mean for p in sc.points]
    err = [(p.throughput.ci_high - p.throughput.mean) if p.throughput.n > 1 else 0.0 for p in sc.points]
    ax.errorbar(n, mean, yerr=err, marker="o", capsize=3, color=PALETTE[0], label="aggregate ops/s")
    ax.axvline(sc.peak, color="0.5", lw=0.8, ls=":")
    ax.set_xticks(n)
    ax.set_xlabel("instances")
    ax.set_ylabel("aggregate ops/s")
    ax.set_ylim(bottom=0)
    ax.set_title(f"{sc.group} · {sc.workload}", fontsize=8)
    twin = ax.twinx()
    twin.plot(n, [p.p99_us / 1000 for p in sc.points], marker="s", ls="--", color=PALETTE[6], label="p99 (ms)")
    twin.set_ylabel("p99 latency (ms)")
    twin.set_ylim(bottom=0)
    twin.spines["right"].set_visible(True)
    lines = ax.get_legend_handles_labels()[0] + twin.get_legend_handles_labels()[0]
    ax.legend(lines, [h.get_label() for h in lines], fontsize=7, frameon=False, loc="center left")


def _usage_panel(ax: plt.Axes, sc: Scaling) -> None:
    n = [p.instances for p in sc.points]
    series = {
        "CPU busy %": [p.usage.cpu_busy for p in sc.points],
        "I/O wait %": [p.usage.iowait for p in sc.points],
        "device busy %": [p.usage.disk_util for p in sc.points],
        "memory % of limit": [100 * p.usage.memory for p in sc.points],
    }
    for i, (label, values) in enumerate(series.items()):
        if not all(np.isnan(values)):
            ax.plot(n, values, marker="o", color=PALETTE[2 * i + 2], label=label)
    ax.axhline(90, color="0.6", lw=0.8, ls=":")
    ax.set_xticks(n)
    ax.set_ylim(0, 105)
    ax.set_xlabel("instances")
    ax.set_ylabel("%")
    ax.set_title(sc.verdict(), fontsize=8)
    ax.legend(fontsize=7, frameon=False, loc="lower right")


def _layer(stack: StackSpec) -> str:
    return f"{stack.filesystem.type} {stack.engine.kind}/{stack.placement.kind}"


def _size(v: float) -> str:
    v = int(v)
    for unit, div in (("G", 2**30), ("M", 2**20), ("k", 2**10)):
        if v >= div and v % div == 0:
            return f"{v // div}{unit}"
    return str(v)


def save(fig: Figure, directory: Path, name: str, svg: str | None = None) -> dict[str, Path]:
    """``svg``: the figure already rendered as SVG (the HTML report inlines it), written rather than redrawn."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = {ext: directory / f"{name}.{ext}" for ext in ("png", "svg")}
    fig.savefig(paths["png"], format="png", bbox_inches="tight")
    if svg is None:
        fig.savefig(paths["svg"], format="svg", bbox_inches="tight")
    else:
        paths["svg"].write_text(svg, encoding="utf-8")
    plt.close(fig)
    return paths
