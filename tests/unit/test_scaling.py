"""Scaling over database instances: the curve, the peak, and the resource that saturated first."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from layerbench.analysis.resources import trial_usage
from layerbench.analysis.scaling import scaling
from layerbench.records import hdr
from layerbench.records.info import TrialInfo
from layerbench.spec.databases import YcsbWorkload
from layerbench.spec.models import Cell, StackSpec
from layerbench.store.read import StoredCell
from layerbench.workloads.pgbench import latencies_from_logs, log_files
from tests.unit.stored import stored_cell, stored_trial

STACK = {"device": {"kind": "loop"}, "filesystem": "xfs", "engine": "docker:overlay2", "placement": "volume"}
WORKLOAD = YcsbWorkload(name="A")
MIB = 2**20


def cell(instances: int, profile: str = "none") -> StoredCell:
    stack = StackSpec.model_validate({**STACK, "server": "postgres", "instances": instances, "profile": profile})
    return stored_cell(Cell(stack=stack, workload=WORKLOAD), f"c{instances}{profile}")


def run(levels: dict[int, tuple[float, float, float, float]], profile: str = "none", spread: float = 1) -> tuple:
    """levels: instances → (ops per instance, CPU busy %, device util %, memory share); two trials each,
    the second ``spread`` ops/s faster per instance."""
    cells, samples, monitor, trials = [], [], [], []
    trial = 0
    for n, (ops, cpu, util, mem) in levels.items():
        c = cell(n, profile)
        cells.append(c)
        for rep in range(2):
            trial += 1
            for i in range(n):  # one "ops" sample per instance: their sum is the aggregate
                samples.append((c.cell_id, trial, "ops", ops + rep * spread, "", f"i{i}"))
            samples.append((c.cell_id, trial, "lat_p99_us", 100.0 * n, "read", "all"))
            samples.append((c.cell_id, trial, "lat_p99_us", 999.0, "update", "all"))
            for t in (1.0, 2.0):
                monitor += [
                    (c.cell_id, trial, t, "cpu.user", cpu * 0.75, "%"),
                    (c.cell_id, trial, t, "cpu.system", cpu * 0.25, "%"),
                    (c.cell_id, trial, t, "cpu.iowait", 5.0, "%"),
                    (c.cell_id, trial, t, "disk.vda.util", util, "%"),
                    (c.cell_id, trial, t, "container.i0.memory", mem * 256 * MIB, "B"),
                ]
            limits = {"memory": 256 * MIB} if profile == "MEM" else {}
            info = {"devices": ["loop3", "vda"], "endpoints": [{"name": "i0", "limits": limits}]}
            trials.append(stored_trial(trial, c.cell_id, info))
    cols = ["cell_id", "trial_id", "metric", "value", "direction", "job"]
    mcols = ["cell_id", "trial_id", "t", "series", "value", "unit"]
    return cells, pd.DataFrame(samples, columns=cols), pd.DataFrame(monitor, columns=mcols), trials


def test_peak_and_first_saturated_resource() -> None:
    # Aggregate: 1x9000, 2x4800 = 9600 (the peak), 4x2000 = 8000; CPU crosses 90% at 4, the device never.
    (sc,) = scaling(*run({1: (9000, 70, 20, 0.5), 2: (4800, 88, 25, 0.5), 4: (2000, 97, 30, 0.5)}))
    assert [p.instances for p in sc.points] == [1, 2, 4]
    assert round(sc.points[1].throughput.mean) == 9601  # 2 instances x (4800, then 4801)
    assert sc.peak == 2
    assert sc.saturated == {"CPU": 4} and sc.bottleneck == "CPU"
    assert sc.verdict() == "aggregate throughput peaks at 2 instances; CPU saturated first, at 4 instances"
    assert sc.points[2].p99_us == 400.0  # the reads' merged p99, not the updates'
    assert sc.ties == ()  # steady trials: the peak is clear


def test_memory_counts_only_against_a_limit() -> None:
    levels = {1: (5000, 60, 40, 1.0), 2: (2600, 80, 45, 1.0)}
    (uncontrolled,) = scaling(*run(levels))
    assert "memory" not in uncontrolled.saturated  # no limit: page cache filling the host is no saturation
    (limited,) = scaling(*run(levels, profile="MEM"))
    assert limited.saturated == {"memory": 1} and limited.bottleneck == "memory"


def test_nothing_saturated_says_where_it_stood() -> None:
    (sc,) = scaling(*run({1: (1000, 30, 10, 0.2), 2: (900, 40, 12, 0.2)}))
    assert sc.bottleneck is None and sc.peak == 2
    assert "no resource saturated (at 2: CPU 40%, device 12% busy (bandwidth not calibrated))" in sc.verdict()


def test_the_device_saturates_by_its_bytes_per_second_not_by_its_util() -> None:
    """Issue 29: NVMe and zram read near 100% busy long before their bandwidth runs out; saturation is bytes/s
    against the bandwidth the run took for the device (reads over the read bandwidth plus writes over the
    write bandwidth)."""
    budget = {"server": {"budget": {"read_bps": 1000.0, "write_bps": 500.0}}}
    busy = pd.DataFrame([("disk.vda.util", 99.0), ("disk.vda.read_bps", 100.0), ("disk.vda.write_bps", 50.0)],
                        columns=["series", "value"])  # fmt: skip
    usage = trial_usage(busy, TrialInfo.from_json({"devices": ["vda"], **budget}))
    assert usage.disk_util == 99.0 and usage.bandwidth == pytest.approx(20.0)  # busy, a fifth of its bandwidth
    full = pd.DataFrame([("disk.vda.util", 40.0), ("disk.vda.read_bps", 600.0), ("disk.vda.write_bps", 200.0)],
                        columns=["series", "value"])  # fmt: skip
    assert trial_usage(full, TrialInfo.from_json({"devices": ["vda"], **budget})).bandwidth == pytest.approx(100.0)
    no_budget = TrialInfo.from_json({"devices": ["vda"]})
    assert math.isnan(trial_usage(full, no_budget).bandwidth)  # no bandwidth taken: unknown


def test_a_single_instance_count_is_no_curve() -> None:
    assert scaling(*run({1: (1000, 30, 10, 0.2)})) == []


def test_usage_reads_the_lowest_device_of_the_trial() -> None:
    points = pd.DataFrame(
        [("disk.loop3.util", 99.0), ("disk.vda.util", 40.0), ("disk.vda.read_bps", 3.0), ("disk.vda.write_bps", 4.0)],
        columns=["series", "value"],
    )
    usage = trial_usage(points, TrialInfo.from_json({"devices": ["loop3", "vda"]}))
    assert usage.disk_util == 40.0 and usage.disk_bps == 7.0


def test_a_peak_the_trials_cannot_tell_apart_says_so() -> None:
    # 1 x 9000|12000 vs 2 x 4800|6300: means 10500 and 11100, two noisy trials each.
    (sc,) = scaling(*run({1: (9000, 70, 20, 0.5), 2: (4800, 88, 25, 0.5)}, spread=1500))
    assert sc.peak == 2 and sc.ties == (1,)
    assert sc.verdict().startswith("aggregate throughput peaks at 2 instances (1 within noise of it)")


def test_p99_comes_from_the_trials_histograms_merged() -> None:
    """Two trials of real pgbench latencies (one calm, one with a slow tail): the merge's p99, not a mean."""
    data = Path(__file__).parent.parent / "data" / "pgbench" / "15"
    trials = [latencies_from_logs(log_files(str(data / "tpcb-like-c2-rate200.logs" / "tx")))]
    trials.append(latencies_from_logs(log_files(str(data / "tpcb-like-c4-rate500-repeatable-read.logs" / "tx"))))
    cells, samples, monitor, stored = run({1: (1000, 30, 10, 0.2), 2: (900, 40, 12, 0.2)})
    samples = samples[samples["metric"] != "lat_p99_us"]
    for i, t in enumerate(stored):
        values = trials[t.id % 2]
        stored[i] = replace(t, client_latency={"": hdr.of_values(values)})
        row = {"cell_id": t.cell_id, "trial_id": t.id, "metric": "lat_p99_us", "direction": "", "job": "all"}
        samples = pd.concat([samples, pd.DataFrame([{**row, "value": float(np.percentile(values, 99))}])])
    (sc,) = scaling(cells, samples, monitor, stored)
    merged = hdr.value_at_percentile(hdr.merged(hdr.of_values(v) for v in trials), 99)
    mean_of_p99s = float(np.mean([np.percentile(v, 99) for v in trials]))
    assert abs(merged - mean_of_p99s) > 0.03 * merged  # the data tell the two apart (1757 against 1833 µs)
    assert [p.p99_us for p in sc.points] == [merged, merged]
