"""The figures storage people expect of a sweep and of a trial (fio-plot's): IOPS and p99 latency over queue
depth x job count as heatmaps, bandwidth against block size, and latency over time within a trial.

Each takes the read model's frames and cells and returns a Figure, or None when the run has nothing of that
shape (no workload swept over both iodepth and numjobs, none over bs, no latency logs), as figures.py's do.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from layerbench.report.figures import PALETTE, STYLE, _size
from layerbench.store.read import StoredCell, Timeline

QD, JOBS, BS = "iodepth", "numjobs", "bs"
MIB = 2**20


def per_trial_total(samples: pd.DataFrame, metric: str) -> pd.Series:
    """Per cell, the mean over its trials of ``metric`` summed over directions and jobs in each trial."""
    rows = samples[samples["metric"] == metric]
    if rows.empty:
        return pd.Series(dtype=float)
    per_trial = rows.groupby(["cell_id", "trial_id"], observed=True)["value"].sum()
    return per_trial.groupby(level="cell_id", observed=True).mean()


def slowest_p99(pct: pd.DataFrame) -> pd.Series:
    """Per cell, the p99 completion latency (ns) of its slower direction, from histograms merged over trials."""
    if pct.empty or "p99" not in pct.columns:
        return pd.Series(dtype=float)
    return pct.groupby("cell_id")["p99"].max()


def _swept(cells: Sequence[StoredCell], *fields: str) -> list[StoredCell]:
    return [c for c in cells if all(f in c.point.values for f in fields)]


def qd_jobs_heatmaps(samples: pd.DataFrame, pct: pd.DataFrame, cells: Sequence[StoredCell]) -> Figure | None:
    """Per swept workload and stack (columns): IOPS (top) and p99 completion latency (bottom) over queue depth
    (x) x job count (y), each square labelled with its value."""
    swept = _swept(cells, QD, JOBS)
    if not swept or samples.empty:
        return None
    iops, p99 = per_trial_total(samples, "iops"), slowest_p99(pct)
    rows = [
        {
            "panel": f"{c.operation} · {c.stack_label}",
            QD: c.point.values[QD],
            JOBS: c.point.values[JOBS],
            "iops": iops.get(c.cell_id, np.nan),
            "p99": p99.get(c.cell_id, np.nan) / 1000,
        }
        for c in swept
    ]
    data = pd.DataFrame(rows)
    if data[QD].nunique() < 2 and data[JOBS].nunique() < 2:
        return None
    panels = list(dict.fromkeys(data["panel"]))
    metrics = [("iops", "IOPS", "viridis", "{:,.0f}"), ("p99", "p99 latency (µs)", "magma_r", "{:,.0f}")]
    with plt.rc_context({**STYLE, "axes.grid": False}):
        width = max(3.2, 0.55 * data[QD].nunique() + 1.6)
        height = max(2.4, 0.4 * data[JOBS].nunique() + 1.4)
        fig, axes = plt.subplots(
            2, len(panels), figsize=(width * len(panels), 2 * height), squeeze=False, layout="constrained"
        )
        for j, panel in enumerate(panels):
            part = data[data["panel"] == panel]
            for i, (column, label, cmap, fmt) in enumerate(metrics):
                grid = part.pivot_table(index=JOBS, columns=QD, values=column, aggfunc="mean")
                _heatmap(axes[i][j], grid, cmap, fmt, fig.colorbar, label)
                axes[i][j].set_title(f"{label} · {panel}" if i == 0 else label, fontsize=8)
        fig.suptitle("Queue depth x job count: IOPS (all jobs, mean over trials) and p99 of the slower direction")
    return fig


def _heatmap(ax: plt.Axes, grid: pd.DataFrame, cmap: str, fmt: str, colorbar: object, label: str) -> None:
    values = grid.to_numpy(dtype=float)
    image = ax.imshow(values, cmap=cmap, aspect="auto", origin="lower")
    finite = values[np.isfinite(values)]
    middle = (finite.min() + finite.max()) / 2 if finite.size else 0
    for (a, b), v in np.ndenumerate(values):
        if np.isfinite(v):
            dark = (v < middle) == (not cmap.endswith("_r"))
            ax.text(b, a, fmt.format(v), ha="center", va="center", fontsize=7, color="white" if dark else "black")
    ax.set_xticks(range(len(grid.columns)), [str(int(v)) for v in grid.columns])
    ax.set_yticks(range(len(grid.index)), [str(int(v)) for v in grid.index])
    ax.set_xlabel("queue depth (iodepth)")
    ax.set_ylabel("jobs (numjobs)")
    colorbar(image, ax=ax, shrink=0.8, label=label)  # type: ignore[operator]


def bandwidth_by_block_size(samples: pd.DataFrame, cells: Sequence[StoredCell]) -> Figure | None:
    """Per workload swept over bs: bandwidth (all jobs and directions, mean over trials; bars: the trials'
    lowest and highest) against block size, one line per stack (and per value of any other swept field)."""
    swept = _swept(cells, BS)
    if not swept or samples.empty:
        return None
    rows = samples[(samples["metric"] == "bw") & samples["cell_id"].isin({c.cell_id for c in swept})]
    if rows.empty:
        return None
    per_trial = rows.groupby(["cell_id", "trial_id"], observed=True)["value"].sum() / MIB
    lines: dict[str, list[tuple[float, float, float, float]]] = {}
    for c in swept:
        if c.cell_id not in per_trial.index.get_level_values("cell_id"):
            continue
        trials = per_trial.loc[c.cell_id]
        others = ", ".join(f"{k}={_size(v) if k == 'size' else v}" for k, v in c.point.values.items() if k != BS)
        key = f"{c.operation} · {c.stack_label}" + (f" ({others})" if others else "")
        lines.setdefault(key, []).append((c.point.values[BS], trials.mean(), trials.min(), trials.max()))
    if not lines or max(len(v) for v in lines.values()) < 2:
        return None
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(7.5, 4), layout="constrained")
        for i, (key, points) in enumerate(lines.items()):
            points.sort()
            x = [p[0] for p in points]
            mean = np.array([p[1] for p in points])
            spread = [mean - [p[2] for p in points], np.array([p[3] for p in points]) - mean]
            ax.errorbar(x, mean, yerr=spread, marker="o", ms=4, capsize=3, color=PALETTE[i % 20], label=key)
        blocks = sorted({p[0] for points in lines.values() for p in points})
        ax.set_xscale("log", base=2)
        ax.set_xticks(blocks, [_size(b) for b in blocks])
        ax.minorticks_off()
        ax.set_ylim(bottom=0)
        ax.set_xlabel("block size")
        ax.set_ylabel("bandwidth (MiB/s)")
        ax.set_title("Bandwidth against block size (mean over trials; bars: lowest and highest trial)")
        ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


TIMELINE_COLUMNS = 3


def latency_over_time(timelines: Sequence[Timeline], cells: Sequence[StoredCell]) -> Figure | None:
    """Per workload (a panel): each stack's mean latency per interval over its first successful trial, from
    fio's latency log (solid: reads, dashed: writes). A cache filling, a device's write cliff, a neighbour's
    burst show here, where the trial's mean hides them."""
    by_id = {c.cell_id: c for c in cells}
    first: dict[str, Timeline] = {}
    for t in sorted(timelines, key=lambda t: (t.repetition, t.trial_id)):
        if t.cell_id in by_id and t.intervals:
            first.setdefault(t.cell_id, t)
    if not first:
        return None
    workloads = list(dict.fromkeys(by_id[cid].workload for cid in by_id if cid in first))
    stacks = list(dict.fromkeys(by_id[cid].stack_label for cid in by_id if cid in first))
    n_cols = min(TIMELINE_COLUMNS, len(workloads))
    n_rows = -(-len(workloads) // n_cols)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(
            n_rows, n_cols, figsize=(3.8 * n_cols + 1.5, 2.6 * n_rows + 0.6), squeeze=False, layout="constrained"
        )
        for ax in axes.flat[len(workloads) :]:
            ax.set_visible(False)
        for ax, workload in zip(axes.flat, workloads, strict=False):
            for cid, t in first.items():
                c = by_id[cid]
                if c.workload != workload:
                    continue
                colour = PALETTE[stacks.index(c.stack_label) % 20]
                for direction, style in (("read", "-"), ("write", "--"), ("trim", ":")):
                    points = [i for i in t.intervals if i.direction == direction]
                    if points:
                        label = c.stack_label + ("" if direction == "read" else f" ({direction})")
                        x, y = [i.t_s for i in points], [i.mean_ns / 1000 for i in points]
                        ax.plot(x, y, style, color=colour, lw=1.2, marker=".", ms=3, label=label)
            ax.set_title(workload, fontsize=8)
            ax.set_xlabel("seconds into the trial")
            ax.set_ylabel("mean latency (µs)")
            ax.set_ylim(bottom=0)
        handles, labels = axes.flat[0].get_legend_handles_labels()
        for ax in axes.flat[1 : len(workloads)]:
            for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
                if label not in labels:
                    handles.append(h)
                    labels.append(label)
        fig.legend(handles, labels, fontsize=7, frameon=False, loc="outside lower center", ncols=min(3, len(labels)))
        every = sorted({t.every_ms for t in first.values()})
        fig.suptitle(
            f"Latency over time in each cell's first trial (fio's log, mean per {'/'.join(map(str, every))} ms)"
        )
    return fig
