"""What each trial used of the host, from its monitor series: CPU, I/O wait, the device, memory.

Computed when read, from the points the monitor stored, so a better summary
applies to old runs too. The device is the lowest one under the stack (the
disk a loop device's file lives on), as the trial recorded it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from layerbench.records.info import BudgetInfo, TrialInfo

NAN = float("nan")


@dataclass(frozen=True)
class Usage:
    """Means over one trial (or over the trials of a cell)."""

    cpu_busy: float  # % of all CPUs in user and system time
    iowait: float  # % of all CPUs waiting for I/O
    disk_util: float  # % of the time the device was busy
    disk_bps: float  # bytes/s read and written on it
    memory: float  # the fullest container's memory use as a share of its limit (NaN: no limit)
    # % of the device's bandwidth as the run took it (calibrated, or the spec's): reads over the read
    # bandwidth plus writes over the write bandwidth, each direction's share of the device's time. NaN where
    # the run had none. %util is no measure of it: NVMe and zram read near 100% busy long before.
    bandwidth: float = NAN


def trial_usage(points: pd.DataFrame, info: TrialInfo) -> Usage:
    """``points``: one trial's monitor rows (series, value); ``info``: the trial's recorded conditions."""
    series = points.groupby("series")["value"].mean()
    devices = info.devices or ()
    disk = devices[-1] if devices else None
    return Usage(
        cpu_busy=float(series.get("cpu.user", NAN) + series.get("cpu.system", NAN)),
        iowait=float(series.get("cpu.iowait", NAN)),
        disk_util=float(series.get(f"disk.{disk}.util", NAN)) if disk else NAN,
        disk_bps=float(series.get(f"disk.{disk}.read_bps", NAN) + series.get(f"disk.{disk}.write_bps", NAN))
        if disk
        else NAN,
        memory=_memory_share(points, info),
        bandwidth=_bandwidth_share(series, disk, info),
    )


def _bandwidth_share(series: pd.Series, disk: str | None, info: TrialInfo) -> float:
    budget = (info.server.budget if info.server else None) or BudgetInfo()
    read_cap, write_cap = budget.read_bps, budget.write_bps
    if not disk or not read_cap or not write_cap:
        return NAN
    read, write = series.get(f"disk.{disk}.read_bps", NAN), series.get(f"disk.{disk}.write_bps", NAN)
    return float(100 * (read / read_cap + write / write_cap))


def _memory_share(points: pd.DataFrame, info: TrialInfo) -> float:
    shares = []
    for endpoint in info.endpoints or ():
        limit = (endpoint.limits or {}).get("memory")
        rows = points[points["series"] == f"container.{endpoint.name}.memory"]
        if limit and not rows.empty:
            shares.append(float(rows["value"].max()) / float(limit))
    return max(shares) if shares else NAN


def usage_by_trial(monitor: pd.DataFrame, infos: dict[int, TrialInfo]) -> dict[int, Usage]:
    if monitor.empty:
        return {}
    return {
        int(tid): trial_usage(rows, infos.get(int(tid)) or TrialInfo()) for tid, rows in monitor.groupby("trial_id")
    }


def mean_usage(usages: list[Usage]) -> Usage:
    def avg(name: str) -> float:
        values = [getattr(u, name) for u in usages if not math.isnan(getattr(u, name))]
        return sum(values) / len(values) if values else NAN

    return Usage(avg("cpu_busy"), avg("iowait"), avg("disk_util"), avg("disk_bps"), avg("memory"), avg("bandwidth"))
