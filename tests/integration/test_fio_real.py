"""The fio adapter against the real fio, in a temporary directory (no root needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from layerbench import proc
from layerbench.spec.models import FioWorkload
from layerbench.workloads import fio

pytestmark = pytest.mark.requires_fio

SIZE = 16 * 2**20


def test_precondition_then_a_randread_on_the_same_file(tmp_path: Path) -> None:
    assert fio.fio_version(proc.run).startswith("fio-")
    pre = proc.run(fio.precondition_argv(SIZE, str(tmp_path), False), timeout=120).check()
    assert fio.parse(pre.stdout).jobs[0].directions["write"].io_bytes == SIZE  # every byte written once
    data = Path(fio.data_file(str(tmp_path), SIZE))
    filled = data.stat()

    # 1.5 s: fio would run a "--runtime=1.5" for 1 s; the adapter passes milliseconds.
    w = FioWorkload(name="RR", rw="randread", bs="4k", numjobs=2, iodepth=4, size=SIZE, runtime_s=1.5, ramp_s=0)
    done = proc.run(fio.argv(w, str(tmp_path), False), timeout=60).check()
    result = fio.parse(done.stdout)

    assert [(j.name, j.error) for j in result.jobs] == [("RR", 0)]  # two jobs, one group
    read = result.jobs[0].directions["read"]
    assert set(result.jobs[0].directions) == {"read"} and read.iops > 0
    assert read.runtime_ms >= 1400 and read.clat_bins and "p99" in read.lat["clat"].percentiles
    # The read neither laid the file out again nor made files of its own.
    assert data.stat().st_mtime_ns == filled.st_mtime_ns and data.stat().st_size == SIZE
    assert sorted(p.name for p in tmp_path.iterdir()) == [data.name]
    assert {("iops", "read", "RR"), ("clat_p99", "read", "RR")} <= {
        (s.metric, s.direction, s.job) for s in fio.samples(result)
    }


def test_a_size_that_is_not_a_multiple_of_1m_is_filled_to_the_end(tmp_path: Path) -> None:
    size = 1536000  # 1500 KiB: a 1 MiB block would leave the last 476 KiB unwritten
    done = proc.run(fio.precondition_argv(size, str(tmp_path), False), timeout=60).check()
    assert fio.parse(done.stdout).jobs[0].directions["write"].io_bytes == size


JOB_FILE = """
[global]
ioengine=psync
filename=shared.dat
size=4M
directory=/nowhere

[fill]
rw=write
bs=1M

[check]
stonewall
rw=randread
bs=4k
runtime=500ms
time_based
"""


def test_a_rewritten_job_file_runs_at_the_placement_with_its_groups(tmp_path: Path) -> None:
    job = tmp_path / "job.fio"
    job.write_text(fio.rewrite_job_file(JOB_FILE, str(tmp_path), False))
    done = proc.run(fio.job_file_argv(str(job)), timeout=60).check()
    result = fio.parse(done.stdout)
    assert [(j.name, j.groupid, j.error, set(j.directions)) for j in result.jobs] == [
        ("fill", 0, 0, {"write"}),
        ("check", 1, 0, {"read"}),
    ]
    assert json.loads(done.stdout[done.stdout.index("{") :])["global options"]["directory"] == str(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.fio", "shared.dat"]  # both groups, one file


@pytest.mark.parametrize("on_device", [False, True], ids=["directory", "device"])
def test_a_trial_keeps_fios_latency_log_and_leaves_no_log_behind(tmp_path: Path, on_device: bool) -> None:
    """run_trial on a Target over a temporary directory (on_device: a file standing in for a device): fio writes
    its latency log, the trial reads it back into its record, and outside the placement nothing is left."""
    from layerbench.run.kinds.single import run_trial
    from layerbench.run.schedule import Trial
    from layerbench.spec.models import Cell, StackSpec
    from layerbench.stack.target import Device, Target
    from layerbench.workloads import fio_log

    data, work = tmp_path / "data", tmp_path / "work"
    data.mkdir()
    work.mkdir()

    def put(name: str, text: str) -> str:
        (work / name).write_text(text)
        return str(work / name)

    path = str(data / "device") if on_device else str(data)
    if on_device:
        proc.run(["truncate", f"--size={SIZE}", path], timeout=10).check()
    target = Target(lambda argv, timeout: proc.run(argv, timeout=timeout), put, path, on_device,
                    Device("", "file", SIZE), "native")  # fmt: skip
    w = FioWorkload(name="RR", rw="randread", bs="4k", numjobs=2, iodepth=4, size=SIZE, runtime_s=1, ramp_s=0)
    stack = StackSpec.model_validate(
        {"device": {"kind": "loop"}, "filesystem": "ext4", "engine": "native", "placement": "host-dir"}
    )
    record = run_trial(target, Trial(Cell(stack=stack, workload=w), 0), {}, latency_log=True)
    assert record.status == "ok", record.stderr
    assert any(a.startswith("--write_lat_log=") for a in record.argv) and record.info["lat_log_ms"] == 100
    found = fio_log.intervals(fio_log.parse(record.logs["lat"]), 100)
    assert len(fio_log.parse(record.logs["lat"])) == 2  # both jobs' logs
    assert 8 <= len(found) <= 10 and {i.direction for i in found} == {"read"}  # about ten intervals of 100 ms
    assert list(work.iterdir()) == []  # on a device the logs went beside the job files, and were removed
    # Its completion histograms beside them, as the readers merge them: its output's, both jobs together.
    bins = fio.completion_bins(fio.parse(record.raw_output))
    assert record.logs[fio.BINS_LOG] == fio.bins_text(bins) and sum(bins["read"].values()) > 0
