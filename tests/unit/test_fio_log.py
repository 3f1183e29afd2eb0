"""fio's latency logs (write_lat_log with log_avg_msec), parsed from logs captured from real runs of fio 3.33
(tests/data/fio/3.33/latlog-*: see its README) and checked against the same runs' JSON."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from layerbench.proc import Completed
from layerbench.run.kinds.single import run_trial
from layerbench.run.schedule import Trial
from layerbench.spec.load import load
from layerbench.spec.models import Cell, FioWorkload, StackSpec
from layerbench.stack.target import Device, Target
from layerbench.workloads import fio, fio_log

DATA = Path(__file__).parent.parent / "data" / "fio" / "3.33"


def test_two_jobs_averaged_per_interval() -> None:
    jobs = fio_log.parse((DATA / "latlog-randread-4k-2x4.log").read_text())
    assert [len(j) for j in jobs] == [11, 11]  # ten intervals of 100 ms and each job's partial last one
    found = fio_log.intervals(jobs, 100)
    assert [i.t_s for i in found] == pytest.approx([0.1 * k for k in range(1, 11)])
    assert {i.direction for i in found} == {"read"} and all(i.jobs == 2 for i in found)
    assert found[0].mean_ns == pytest.approx((175927 + 141318) / 2)
    assert found[-1].mean_ns == pytest.approx((147343 + 146991) / 2)  # the partial flushes (46973, 90865) left out
    # The intervals' mean is the run's mean latency to within what differs between them (each weighs alike).
    whole = fio.parse((DATA / "latlog-randread-4k-2x4.json").read_text()).jobs[0].directions["read"].lat["lat"]
    mean = sum(i.mean_ns for i in found) / len(found)
    assert mean == pytest.approx(whole.mean_ns, rel=0.1)


def test_both_directions_and_no_ramp() -> None:
    found = fio_log.intervals(fio_log.parse((DATA / "latlog-randrw-70-ramp.log").read_text()), 100)
    reads = [i for i in found if i.direction == "read"]
    writes = [i for i in found if i.direction == "write"]
    # 500 ms ramp, then 500 ms measured: the log starts after the ramp; 303 ms is the 300 ms interval.
    assert [i.t_s for i in reads] == [i.t_s for i in writes] == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5])
    assert reads[2].mean_ns == 174543 and writes[2].mean_ns == 242618
    result = fio.parse((DATA / "latlog-randrw-70-ramp.json").read_text()).jobs[0].directions
    assert sum(i.mean_ns for i in writes) / 5 > sum(i.mean_ns for i in reads) / 5  # as fio's own means say
    assert result["write"].lat["lat"].mean_ns > result["read"].lat["lat"].mean_ns


def test_not_a_log() -> None:
    with pytest.raises(fio_log.FioLogError, match="line 2"):
        fio_log.parse("100, 5, 0, 0, 0\nfio: something\n")
    with pytest.raises(fio_log.FioLogError, match="direction 7"):
        fio_log.parse("100, 5, 7, 0, 0\n")


def test_asked_for_where_layerbench_builds_the_command() -> None:
    w = FioWorkload(name="RR", runtime_s=5, numjobs=2)
    args = fio.argv(w, "/data", False, lat_log="/tmp/lb-RR")
    assert "--write_lat_log=/tmp/lb-RR" in args and "--log_avg_msec=100" in args
    assert "--write_lat_log=/tmp/lb-RR" not in fio.argv(w, "/data", False)
    assert fio_log.files("/tmp/lb-RR", 2) == ["/tmp/lb-RR_lat.1.log", "/tmp/lb-RR_lat.2.log"]
    assert len(fio_log.written("/tmp/lb-RR", 2)) == 6 and "/tmp/lb-RR_slat.2.log" in fio_log.written("/tmp/lb-RR", 2)
    assert fio_log.interval_ms(FioWorkload(name="L", runtime_s=60)) == 1200
    assert fio_log.interval_ms(FioWorkload(name="H", runtime_s=3600)) == 10_000
    assert fio_log.interval_ms(FioWorkload(name="S", runtime_s=1)) == 100
    assert not fio_log.wanted(FioWorkload(name="P", personality="varmail-like"))


def trial_argv(tmp_path: Path, **asked: bool) -> list[str]:
    """The command line a trial ran, at a target whose every command answers with fio's captured JSON."""
    output = (
        Path(__file__).parent.parent / "data" / "fio" / "3.33" / "container-volume-randread-4k-32x32.json"
    ).read_text()
    ran: list[list[str]] = []

    def run(argv: Sequence[str], timeout: float) -> Completed:
        ran.append(list(argv))
        return Completed(list(argv), 0, output, "")

    target = Target(run, lambda name, text: str(tmp_path / name), str(tmp_path), False, Device("", "file", 0), "native")
    w = FioWorkload(name="RR", runtime_s=5)
    stack = StackSpec.model_validate(
        {"device": {"kind": "loop"}, "filesystem": "ext4", "engine": "native", "placement": "host-dir"}
    )
    record = run_trial(target, Trial(Cell(stack=stack, workload=w), 0), {}, **asked)
    assert record.status == "ok", record.stderr
    return ran[0]


def test_a_trial_asks_for_the_latency_log_only_where_the_spec_does(tmp_path: Path) -> None:
    # It costs fio CPU on every I/O (bench/transparency.py: about 1% at 200k IOPS a core), so it is opt-in.
    assert not any(a.startswith("--write_lat_log=") for a in trial_argv(tmp_path))
    assert any(a.startswith("--write_lat_log=") for a in trial_argv(tmp_path, latency_log=True))
    assert load("sweeps").latency_log and not load("quick").latency_log
