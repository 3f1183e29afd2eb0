"""The checks a trial's monitor series decide: was the CPU the bottleneck, was the host busy with others.

Shared by file workloads' trials and database trials; the judgement itself is
in run/measure/checks.py (pure), this turns a Monitor's points into its inputs.
The monitor reads this host's /proc: a trial that ran on another machine (a
Docker host by URL, a Kubernetes node that is not this host: the engine says so
in ``Target.info["unseen"]``) is skipped, never judged by this host's CPU; a trial
that ended before the monitor's first sample is skipped too, never passed.
"""

from __future__ import annotations

import os
from typing import Any

from layerbench.records.checks import Check
from layerbench.run.measure.checks import FIO_REMEDY, CpuLoad, bottleneck, contended, cpu_limit
from layerbench.run.measure.monitor import Monitor


def bottleneck_check(
    mon: Monitor,
    lowest: str,
    remedy: str = FIO_REMEDY,
    limits: dict[str, dict[str, Any]] | None = None,
    unseen: str | None = None,
) -> Check:
    """``limits``: each monitored container's (by its monitor name, "" for a file workload's one);
    ``unseen``: the machine the trial ran on, where it is not this host."""
    blind = _blind("bottleneck", mon, "cpu.idle", unseen)
    if blind is not None:
        return blind
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


def contended_check(mon: Monitor, unseen: str | None = None) -> Check:
    """CPU that processes outside the cell used during the trial (the monitor's "cpu.outside")."""
    blind = _blind("contended", mon, "cpu.outside", unseen)
    if blind is not None:
        return blind
    seconds = sum(1 for p in mon.points if p.series == "cpu.outside") * mon.interval or 1.0
    top = {comm: used / seconds for comm, used in mon.outside.items()}
    means = _means(mon)
    cores = sum(1 for k in means if k.startswith("cpu.cpu")) or os.cpu_count() or 1
    return contended(means.get("cpu.outside", 0.0), cores, top)


def _blind(name: str, mon: Monitor, series: str, unseen: str | None) -> Check | None:
    """A skip, saying why, where the monitor cannot judge the trial; None where it can."""
    if unseen:
        return Check(
            name, "skip", f"cannot see node {unseen}: the trial ran there, and this host reads only its own CPU"
        )
    if not any(p.series == series for p in mon.points):
        return Check(name, "skip", f"no monitor sample: the trial ended within {mon.interval:g} s, before the first")
    return None


def _means(mon: Monitor) -> dict[str, float]:
    sums: dict[str, list[float]] = {}
    for p in mon.points:
        sums.setdefault(p.series, []).append(p.value)
    return {k: sum(v) / len(v) for k, v in sums.items()}
