"""The figure of a trial on a cluster of storage daemons (Ceph: stack/remote/ceph/state.py): what the client saw
over the trial beside what the cluster was doing, on one time axis, so that a degraded or recovering trial's
latency can be read against recovery's progress (how far it moved, for how long, and when recovery ended).

The client's side is fio's latency log (``latency_log: true``), its time from fio's start; the cluster's is
the ``ceph.*`` series sampled every 5 s (run/measure/state_sampler.py), its time from the sampler's start as
the trial's workload starts. Both start within a second of each other, which the caption says.

Throughput per interval comes from the same log by Little's law: a job of fio keeps ``iodepth`` I/Os in
flight, so it completes iodepth ÷ (its mean latency) of them a second, and the trial the sum over its jobs
(each interval's ``jobs`` × iodepth ÷ the jobs' mean latency). fio's own IOPS log would count them, but the
latency log is what every such trial already keeps; the axis says which it is, and
tests/unit/test_cluster_figures.py holds it to the trial's measured IOPS.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

from layerbench.report.figures import PALETTE, STYLE
from layerbench.store.read import StoredCell, Timeline
from layerbench.workloads import fio_log

PREFIX = "ceph."
DEGRADED, RECOVERING = "ceph.degraded_objects", "ceph.recovering_bps"
MIB = 2**20


def recovery_over_time(
    monitor: pd.DataFrame, timelines: Sequence[Timeline], cells: Sequence[StoredCell]
) -> Figure | None:
    """Per cell on a cluster (its first successful trial): fio's mean write (solid) and read (dotted) latency
    per interval at the top, its I/Os a second by Little's law in the middle; the cluster's degraded objects
    (solid) and recovery rate (dashed) below. None for a run with no cluster series."""
    if monitor.empty:
        return None
    ceph = monitor[monitor["series"].astype(str).str.startswith(PREFIX)]
    if ceph.empty:
        return None
    first = ceph.groupby("cell_id", observed=True)["trial_id"].min()
    by_id = {c.cell_id: c for c in cells}
    shown = [(c.cell_id, int(first[c.cell_id])) for c in cells if c.cell_id in first]  # in the spec's order
    if not shown:
        return None
    several = len({by_id[cid].workload for cid, _ in shown}) > 1
    logs = {t.trial_id: t for t in timelines}
    with plt.rc_context(STYLE):
        fig, (top, middle, bottom) = plt.subplots(3, 1, sharex=True, figsize=(8.5, 7.6), layout="constrained")
        rate = bottom.twinx()
        for i, (cid, tid) in enumerate(shown):
            cell, colour = by_id[cid], PALETTE[i % 20]
            label = f"{cell.stack_label} · {cell.workload}" if several else cell.stack_label
            _latency(top, logs.get(tid), colour, label)
            _throughput(middle, logs.get(tid), in_flight(cell), colour, label)
            points = ceph[ceph["trial_id"] == tid]
            for series, axis, style, scale in ((DEGRADED, bottom, "-", 1.0), (RECOVERING, rate, "--", 1 / MIB)):
                line = points[points["series"].astype(str) == series].sort_values("t")
                axis.plot(line["t"], line["value"] * scale, style, color=colour, marker=".", ms=4, lw=1.2, label=label)
        if not logs.keys() & {tid for _, tid in shown}:
            top.text(
                0.5, 0.5, "no latency log: set latency_log: true", ha="center", va="center", transform=top.transAxes
            )
        top.set_ylabel("mean latency (ms)")
        top.set_ylim(bottom=0)
        middle.set_ylabel("I/Os a second\n(jobs × iodepth ÷ latency)")
        middle.set_ylim(bottom=0)
        bottom.set_ylabel("degraded objects (solid)")
        rate.set_ylabel("recovery (MiB/s, dashed)")
        bottom.set_ylim(bottom=0)
        rate.set_ylim(bottom=0)
        bottom.set_xlabel("seconds into the trial")
        handles, labels = bottom.get_legend_handles_labels()
        fig.legend(handles, labels, fontsize=7, frameon=False, loc="outside lower center", ncols=min(2, len(labels)))
        fig.suptitle("Each cluster cell's first trial: the client's latency against the cluster's recovery")
    return fig


def _latency(ax: plt.Axes, timeline: Timeline | None, colour: str, label: str) -> None:
    if timeline is None:
        return
    for direction, style in (("write", "-"), ("read", ":")):
        points = [i for i in timeline.intervals if i.direction == direction]
        if points:
            x, y = [i.t_s for i in points], [i.mean_ns / 1e6 for i in points]
            ax.plot(x, y, style, color=colour, lw=1.2, label=f"{label} ({direction})")


def in_flight(cell: StoredCell) -> int | None:
    """The I/Os each of the workload's jobs keeps in flight (its iodepth); None where it names none."""
    depth = getattr(cell.cell.workload, "iodepth", None)
    return int(depth) if isinstance(depth, int) else None


def little(timeline: Timeline, depth: int) -> list[tuple[float, float]]:
    """(t, I/Os a second) per interval with one direction in it: jobs × iodepth ÷ their mean latency."""
    by_t: dict[float, list[fio_log.Interval]] = {}
    for i in timeline.intervals:
        by_t.setdefault(i.t_s, []).append(i)
    one = [(t, ii[0]) for t, ii in sorted(by_t.items()) if len(ii) == 1 and ii[0].mean_ns > 0]
    return [(t, i.jobs * depth / (i.mean_ns / 1e9)) for t, i in one]


def _throughput(ax: plt.Axes, timeline: Timeline | None, depth: int | None, colour: str, label: str) -> None:
    if timeline is None or depth is None:
        return
    points = [(t, rate) for t, rate in little(timeline, depth) if rate > 0]
    if points:
        ax.plot([t for t, _ in points], [r for _, r in points], "-", color=colour, lw=1.2, label=label)
