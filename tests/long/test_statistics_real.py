"""The statistics on real measurements: identical cells are not different; a cell throttled by a
block-I/O limit to an eighth of the bandwidth is, and its ratio's CI holds what the limit allows
against the free cell of the same run.

zram reads are CPU-bound, so on a busy machine they are anything but steady: with two CPU-bound
builds beside it on this 2-core host, the free cell's trials spread with a CV of 9-36% (pooled 23%,
six runs of this spec at four repetitions, /proc/loadavg 4.9-7.3; at 5%, three of the six found the
half throttle not significant). Each assertion below holds at that spread except with the stated,
negligible rate; the rates are from 200,000 simulated runs drawing trials from the measured ones
(bootstrap; at 1.5 times the measured spread as well), and tests/unit/test_stats.py
holds the intervals' coverage and the tests' false-positive rates to their nominal values by
simulation, which one run cannot.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from layerbench.analysis.stats import ratio
from layerbench.store.db import Store
from tests.integration.test_run_cli import layerbench

pytestmark = [pytest.mark.requires_root, pytest.mark.requires_fio, pytest.mark.requires_docker, pytest.mark.slow]

SR = {"rw": "read", "bs": "128k", "iodepth": 4, "size": "128MiB", "runtime_s": 2, "ramp_s": 0.5}
STACK = {"filesystem": "ext4", "engine": "docker:overlay2", "placement": "volume"}
# Eight trials a cell: at four, Fieller's interval at the strict level below is unbounded (NaN) whenever
# the CV passes 12%, and Welch's test at that level needs a 3x difference to see one.
REPETITIONS = 8
# Bonferroni's 5% over 500 comparisons: a true A/A pair is called different in one run in 10,000
# (Welch's p is uniform under the null; drawn from the measured trials, 1.3e-4 of 200,000 runs).
STRICT = 1e-4
# The limit is an eighth of the calibration run's bandwidth: the calibration and the main run see
# different load (the free cell ran at 0.76-1.25x calibration's speed here), and at an eighth the
# throttled cell differs significantly (p < 0.05) in every one of 200,000 simulated runs even with
# calibration 2.5x faster than the free cell (5e-5 of them at 1.5 times the measured spread; at a
# half, 31% failed; at a quarter, 0.75%).
FRACTION = 8


def spec(tmp: Path, name: str, stacks: list, workloads: list, reps: int) -> str:
    data = {
        "name": name,
        "device": {"kind": "zram", "size": "512MiB"},
        "stacks": stacks,
        "workloads": workloads,
        "trials": {"repetitions": reps},
    }
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def bw_by_cell(db: Path) -> dict[tuple[str, str], np.ndarray]:
    store = Store.open(db, create=False)
    frame = store.samples_frame(store.resolve_run("latest"))
    rows = frame[frame["metric"] == "bw"].groupby(["stack_label", "workload", "trial_id"])["value"].sum()
    return {key: g.to_numpy() for key, g in rows.groupby(level=[0, 1])}


# Eight rounds of two stacks, each built anew, and a calibration run: 157-167 s measured beside two builds;
# the suite's 300 s a test would leave a host twice as busy no room.
@pytest.mark.timeout(600)
def test_identical_not_different_and_a_throttled_cell_is(tmp_path: Path) -> None:
    dirs = {"db": tmp_path / "r.db", "work": tmp_path / "work", "state": tmp_path / "state"}
    calib = spec(tmp_path, "calibrate", [STACK], [{"name": "SR", **SR}], 3)
    assert layerbench("run", calib, dirs=dirs).returncode == 0
    full = float(np.mean(next(iter(bw_by_cell(dirs["db"]).values()))))

    limit = int(full / FRACTION)
    limited = {**STACK, "limits": {"read_bps": limit}}
    main = spec(tmp_path, "throttle", [STACK, limited], [{"name": "SR-a", **SR}, {"name": "SR-b", **SR}], REPETITIONS)
    done = layerbench("run", main, dirs=dirs)
    assert done.returncode == 0, done.stdout + done.stderr
    values = bw_by_cell(dirs["db"])
    free = "zram/ext4/docker:overlay2/volume"
    a, b = values[(free, "SR-a")], values[(free, "SR-b")]
    assert len(a) == len(b) == REPETITIONS
    same = ratio(a, b, confidence=1 - STRICT)
    print(f"A/A: {same}; CV {np.std(a, ddof=1) / np.mean(a):.1%}, {np.std(b, ddof=1) / np.mean(b):.1%}")  # with -s
    assert same.p_value >= STRICT, (same, a, b)
    # Where the spread leaves Fieller's strict interval bounded (a CV under 36% at eight trials), it
    # holds 1 (a true pair falls outside it in 2e-5 of the simulated runs).
    assert np.isnan(same.ci_low) or same.ci_low <= 1 <= same.ci_high, (same, a, b)

    throttled_label = next(k[0] for k in values if k[0] != free)
    cut = ratio(values[(throttled_label, "SR-a")], values[(free, "SR-a")])
    # Against this run's free cell, not 1/8: calibration's speed is another run's. The throttle delivers
    # at most its limit (measured: up to 1.03x, fio's own second is not the kernel's) and, on a busy
    # host, as little as 0.82x of it at a limit of half the device's speed; so its interval reaches
    # below what the limit allows and, but for a tenth, up to it.
    allowed = limit / float(np.mean(values[(free, "SR-a")]))
    assert cut.significant and cut.ci_low <= allowed and cut.ci_high >= 0.9 * allowed, (cut, allowed)
    cells = json.loads(layerbench("show", "latest", "--json", dirs=dirs).stdout)["cells"]
    assert not [f for c in cells for f in c["flags"] if f["name"] == "limit-applied"]
