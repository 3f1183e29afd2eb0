"""Scaling over the number of database instances, and the resource that ran out first (seed 000, sec. 6).

Cells that differ only in ``instances`` (or, for fio, in ``clients``' count: run/kinds/clients.py stores the
clients' summed ops/s as "ops" and their merged p99 as "lat_p99_us" of job "all", as database trials do)
form a curve: aggregate throughput,
tail latency, and what the host gave (CPU, I/O wait, the device, memory
against the containers' limits) at each count. A resource counts as
saturated at the first count where its mean use crosses its threshold; the
one that saturates first is the bottleneck the paper looked for, and the
count where aggregate throughput peaks is the most instances worth packing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from layerbench.analysis import precision
from layerbench.analysis.latency import client_percentiles
from layerbench.analysis.resources import Usage, mean_usage, usage_by_trial
from layerbench.analysis.stats import Summary, cell_values, ratio, summarize
from layerbench.spec.models import StackSpec
from layerbench.store.read import RunData, StoredCell, StoredTrial

# Use at or above these counts as saturation: CPU busy %, the device's bandwidth in use % (bytes/s against
# the bandwidth the run took for it, not %util), memory as a share of the limit.
SATURATION = {"CPU": 90.0, "device": 90.0, "memory": 0.95}
LATENCY_METRIC = "lat_p99_us"
SIGNIFICANCE = 0.05
MERGED_JOB = "all"  # the percentiles of every client's operations merged, as the trial stored them
CLIENTS_GROUP = "/clients"  # what group_of puts in the name of a curve over clients, where a count stood


@dataclass(frozen=True)
class ScalePoint:
    instances: int
    cell_id: str
    throughput: Summary  # aggregate ops/s over all instances
    values: tuple[float, ...]  # the aggregate of each trial
    p99_us: float  # p99 of every trial's clients merged in one histogram (reads where the mix has them)
    usage: Usage
    p99_high_us: float = math.nan  # the worst trial's p99 (its clients merged): what a ceiling must hold for
    # The widest spread over its trials between the first and the last client to start (ms; NaN: one client,
    # or a run from before it was kept): a sum of clients' throughputs assumes they ran side by side.
    start_spread_ms: float = math.nan


@dataclass(frozen=True)
class Scaling:
    group: str  # the stack without its instance count
    workload: str
    points: list[ScalePoint]
    peak: int  # instances with the highest mean aggregate throughput
    saturated: dict[str, int] = field(default_factory=dict)  # resource → first instance count saturating it
    ties: tuple[int, ...] = ()  # other counts not significantly below the peak (Welch, 5%), or with too few trials

    @property
    def counted(self) -> str:
        """What the curve counts: clients (a stack's ``clients``, group_of's "/clients"), or instances."""
        return "client" if CLIENTS_GROUP in self.group else "instance"

    @property
    def bottleneck(self) -> str | None:
        """The resource(s) that saturated at the lowest instance count, or None."""
        if not self.saturated:
            return None
        first = min(self.saturated.values())
        return " and ".join(r for r, n in sorted(self.saturated.items()) if n == first)

    def verdict(self) -> str:
        peak = f"aggregate throughput peaks at {self.peak} {self.counted}{'s' if self.peak > 1 else ''}"
        if self.ties:
            peak += f" ({', '.join(map(str, self.ties))} within noise of it)"
        if self.bottleneck is None:
            top = self.points[-1].usage
            return f"{peak}; no resource saturated (at {self.points[-1].instances}: {_levels(top)})"
        n = min(self.saturated.values())
        return f"{peak}; {self.bottleneck} saturated first, at {n} {self.counted}{'s' if n > 1 else ''}"


def of_run(data: RunData) -> list[Scaling]:
    """``scaling`` of a loaded run, its intervals at the confidence its trials rule needs."""
    return scaling(data.cells, data.samples, data.monitor, data.trials, precision.confidence(data.trials_rule))


def scaling(
    cells: Sequence[StoredCell],
    samples: pd.DataFrame,
    monitor: pd.DataFrame,
    trials: Sequence[StoredTrial],
    confidence: float = 0.95,
) -> list[Scaling]:
    """One Scaling per group of cells that differ only in instance count; ``confidence`` of the throughput
    intervals (``precision.confidence``)."""
    groups = scale_points(cells, samples, monitor, trials, confidence)
    return [_curve(group, workload, points) for (group, workload), points in groups.items() if len(points) >= 2]


def points_of_run(data: RunData) -> dict[tuple[str, str], list[ScalePoint]]:
    """``scale_points`` of a loaded run, at the confidence its trials rule needs."""
    return scale_points(data.cells, data.samples, data.monitor, data.trials, precision.confidence(data.trials_rule))


def scale_points(
    cells: Sequence[StoredCell],
    samples: pd.DataFrame,
    monitor: pd.DataFrame,
    trials: Sequence[StoredTrial],
    confidence: float = 0.95,
) -> dict[tuple[str, str], list[ScalePoint]]:
    """Every database (or many-client fio) cell as a point of its group, (stack without its count, workload), in
    order of count; a group of one count too: a run checking a plan may measure a single count."""
    groups: dict[tuple[str, str], list[tuple[int, StoredCell]]] = {}
    for c in cells:
        if c.stack.server is not None or c.stack.clients is not None:
            # A workload's name is unique in its run: with the stack, it names the group.
            groups.setdefault((group_of(c.stack), c.workload), []).append((count_of(c.stack), c))
    if not groups:
        return {}  # no database cell: no trial's monitor series to summarize (84,000 of them on a long run)
    ops = cell_values(samples, "ops") if not samples.empty else {}
    members_of = {c.cell_id for members in groups.values() for _, c in members}
    mine = monitor[monitor["cell_id"].isin(members_of)] if not monitor.empty else monitor
    usage = usage_by_trial(mine, {t.id: t.info for t in trials if t.cell_id in members_of})
    tails = _merged_p99(samples, trials)
    return {
        key: [_point(n, c, ops, samples, usage, tails, confidence) for n, c in sorted(members, key=lambda m: m[0])]
        for key, members in groups.items()
    }


def group_of(stack: StackSpec) -> str:
    """The stack's label without its instance (or fio client) count: what names a scaling curve."""
    if stack.clients is not None:  # shared or not stays in the name: they are two curves
        return stack.model_copy(update={"clients": None}).label() + CLIENTS_GROUP + "(shared)" * stack.clients.shared
    return stack.model_copy(update={"instances": 1}).label()


def count_of(stack: StackSpec) -> int:
    """A point's place on the curve: database instances, or fio clients (spec/clients.py)."""
    return stack.clients.count if stack.clients is not None else stack.instances


def _point(
    n: int,
    cell: StoredCell,
    ops: dict[str, np.ndarray],
    samples: pd.DataFrame,
    usage: dict[int, Usage],
    tails: dict[str, float],
    confidence: float,
) -> ScalePoint:
    mine = samples[samples["cell_id"] == cell.cell_id] if not samples.empty else samples
    trial_ids = sorted(set(mine["trial_id"])) if not mine.empty else []
    values = [float(v) for v in ops.get(cell.cell_id, [])]
    return ScalePoint(
        n,
        cell.cell_id,
        summarize(values, confidence),
        tuple(values),
        tails.get(cell.cell_id, _mean_p99(mine)),
        mean_usage([usage[t] for t in trial_ids if t in usage]),
        _worst_p99(mine),
        _widest_start_spread(mine),
    )


def _widest_start_spread(mine: pd.DataFrame) -> float:
    if mine.empty:
        return math.nan
    spreads = mine.loc[mine["metric"] == "start_spread_ms", "value"]
    return float(spreads.max()) if not spreads.empty else math.nan


def _merged_p99(samples: pd.DataFrame, trials: Sequence[StoredTrial]) -> dict[str, float]:
    """Per cell, the p99 (µs) of the histogram every trial kept, merged over its trials: the p99 of
    all operations, not a mean of each trial's p99 (which a slow trial's tail would not move enough)."""
    if samples.empty:
        return {}
    measured = set(samples["trial_id"])
    table = client_percentiles([t for t in trials if t.id in measured])
    if table.empty:
        return {}
    out = {}
    for cell_id, rows in table.groupby("cell_id"):
        ops = sorted(rows["operation"])
        chosen = "read" if "read" in ops else ops[0]
        out[str(cell_id)] = float(rows[rows["operation"] == chosen]["p99"].iloc[0])
    return out


def _mean_p99(rows: pd.DataFrame) -> float:
    """Runs from before trials kept their histograms: the mean of each trial's merged p99, the best left."""
    per_trial = _trial_p99s(rows)
    return float(per_trial.mean()) if per_trial is not None else math.nan


def _worst_p99(rows: pd.DataFrame) -> float:
    """The highest of the trials' own p99s (each its clients merged, as the trial stored it): the upper bound a
    p99 ceiling is checked against, since trials, not operations, are what repeat."""
    per_trial = _trial_p99s(rows)
    return float(per_trial.max()) if per_trial is not None else math.nan


def _trial_p99s(rows: pd.DataFrame) -> pd.Series | None:
    """Each trial's merged p99 of its reads (or, without reads, of its first direction); None without any."""
    if rows.empty:
        return None
    lat = rows[(rows["metric"] == LATENCY_METRIC) & (rows["job"] == MERGED_JOB)]
    if lat.empty:
        return None
    reads = lat[lat["direction"] == "read"]
    chosen = reads if not reads.empty else lat[lat["direction"] == sorted(lat["direction"])[0]]
    return chosen.groupby("trial_id")["value"].mean()


def _curve(group: str, workload: str, points: list[ScalePoint]) -> Scaling:
    means = [p.throughput.mean for p in points]
    finite = [(m, p.instances) for m, p in zip(means, points, strict=True) if not math.isnan(m)]
    peak = max(finite)[1] if finite else points[0].instances
    saturated: dict[str, int] = {}
    for p in points:
        for resource, level in _levels_of(p.usage).items():
            if not math.isnan(level) and level >= SATURATION[resource]:
                saturated.setdefault(resource, p.instances)
    return Scaling(group, workload, points, peak, saturated, _ties(points, peak))


def _ties(points: list[ScalePoint], peak: int) -> tuple[int, ...]:
    """Counts whose throughput the trials cannot tell from the peak's: a peak is only as sharp as the noise."""
    top = next(p for p in points if p.instances == peak)
    out = []
    for p in points:
        if p.instances == peak:
            continue
        p_value = ratio(list(p.values), list(top.values)).p_value
        if math.isnan(p_value) or p_value >= SIGNIFICANCE:
            out.append(p.instances)
    return tuple(out)


def _levels_of(u: Usage) -> dict[str, float]:
    return {"CPU": u.cpu_busy, "device": u.bandwidth, "memory": u.memory}


def _levels(u: Usage) -> str:
    device = "bandwidth not calibrated" if math.isnan(u.bandwidth) else f"{u.bandwidth:.0f}% of its bandwidth"
    parts = [f"CPU {u.cpu_busy:.0f}%", f"device {u.disk_util:.0f}% busy ({device})"]
    if not math.isnan(u.memory):
        parts.append(f"memory {100 * u.memory:.0f}% of the limit")
    return ", ".join(parts)
