"""The checks a trial's monitor series decide: was the CPU the bottleneck, was the host busy with others.

Shared by file workloads' trials and database trials; the judgement itself is
in analysis/checks.py (pure), this turns a Monitor's points into its inputs.
"""

from __future__ import annotations

import os
from typing import Any

from layerbench.analysis.checks import FIO_REMEDY, Check, CpuLoad, bottleneck, contended, cpu_limit
from layerbench.monitor import Monitor


def bottleneck_check(
    mon: Monitor, lowest: str, remedy: str = FIO_REMEDY, limits: dict[str, dict[str, Any]] | None = None
) -> Check:
    """``limits``: each monitored container's (by its monitor name, "" for a file workload's one)."""
    means = _means(mon)
    busy = 100.0 - means.get("cpu.idle", 100.0) - means.get("cpu.iowait", 0.0) if "cpu.idle" in means else 0.0
    cores = {k.split(".")[1]: v for k, v in means.items() if k.startswith("cpu.cpu") and k.endswith(".busy")}
    busiest = max(cores.items(), key=lambda kv: kv[1]) if cores else None
    containers = {}
    for name, asked in (limits or {}).items():
        series = f"container.{name}.cpu_cores" if name else "container.cpu_cores"
        if series in means:
            containers[name] = (means[series], cpu_limit(asked))
    util = means.get(f"disk.{lowest}.util")
    return bottleneck(CpuLoad(busy, busiest, containers), util, remedy)


def contended_check(mon: Monitor) -> Check:
    """CPU that processes outside the cell used during the trial (the monitor's "cpu.outside")."""
    seconds = sum(1 for p in mon.points if p.series == "cpu.outside") * mon.interval or 1.0
    top = {comm: used / seconds for comm, used in mon.outside.items()}
    means = _means(mon)
    cores = sum(1 for k in means if k.startswith("cpu.cpu")) or os.cpu_count() or 1
    return contended(means.get("cpu.outside", 0.0), cores, top)


def _means(mon: Monitor) -> dict[str, float]:
    sums: dict[str, list[float]] = {}
    for p in mon.points:
        sums.setdefault(p.series, []).append(p.value)
    return {k: sum(v) / len(v) for k, v in sums.items()}
