"""fio command lines and job-file rewriting: what fio is asked to do, checked option by option."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from layerbench.spec.models import FioWorkload
from layerbench.workloads import fio

DATA = Path(__file__).parent.parent / "data" / "fio" / "3.33"


def opts(argv: list[str]) -> dict[str, str]:
    pairs = [a.removeprefix("--").split("=", 1) for a in argv[1:] if a.startswith("--") and "=" in a]
    assert len(pairs) == len({k for k, _ in pairs}), "an option given twice"
    return dict(pairs)


def test_workload_argv_shares_one_prefilled_file() -> None:
    w = FioWorkload(name="RR", rw="randread", bs="4k", numjobs=32, iodepth=32, size="512MiB", runtime_s=4)
    argv = fio.argv(w, "/mnt/x/lb-data", path_is_device=False)
    o = opts(argv)
    pre = opts(fio.precondition_argv(int(w.size), "/mnt/x/lb-data", path_is_device=False))
    # One explicit file: fio's 32 clones all do their I/O on it, the file the precondition filled.
    assert o["filename"] == pre["filename"] == "/mnt/x/lb-data/lb-536870912.dat"
    assert "nrfiles" not in o and "directory" not in o and "--norandommap" not in argv
    assert o["bs"] == "4096" and o["numjobs"] == "32" and o["iodepth"] == "32" and o["size"] == "536870912"
    assert o["direct"] == "1" and o["overwrite"] == "0" and o["refill_buffers"] == "1" and o["randrepeat"] == "0"
    assert o["output-format"] == "json+" and o["time_based"] == "1" and o["group_reporting"] == "1"
    assert o["ioengine"] == "libaio" and o["name"] == "RR" and o["rw"] == "randread"
    assert "rwmixread" not in o and "unlink" not in o
    assert pre["rw"] == "write" and pre["refill_buffers"] == "1" and pre["direct"] == "1"
    assert pre["ioengine"] == "libaio" and pre["iodepth"] == "16" and pre["end_fsync"] == "1"
    assert pre["output-format"] == "json" and pre["size"] == "536870912" and pre["bs"] == str(2**20)


def test_sizes_get_files_of_their_own() -> None:
    small, big = (FioWorkload(name="RR", size=s) for s in ("64MiB", "128MiB"))
    assert opts(fio.argv(small, "/d", False))["filename"] != opts(fio.argv(big, "/d", False))["filename"]


def test_device_target_uses_the_device_itself() -> None:
    w = FioWorkload(name="SR", rw="read", bs="128k")
    assert opts(fio.argv(w, "/dev/loop3", path_is_device=True))["filename"] == "/dev/loop3"
    pre = opts(fio.precondition_argv(2**20, "/dev/loop3", path_is_device=True))
    assert pre["filename"] == "/dev/loop3" and pre["size"] == str(2**20)  # only the region the workload uses


def test_mixed_workload_passes_the_mix() -> None:
    w = FioWorkload(name="MIX", rw="randrw", rwmixread=70)
    assert opts(fio.argv(w, "/d", False))["rwmixread"] == "70"


def test_times_are_milliseconds_because_fio_truncates_fractional_seconds() -> None:
    w = FioWorkload(name="RR", runtime_s=1.5, ramp_s=0.25, steadystate="iops_slope:0.3%", ss_dur_s=2.5)
    o = opts(fio.argv(w, "/d", False))
    assert o["runtime"] == "1500ms" and o["ramp_time"] == "250ms"
    assert o["ss_dur"] == "3"  # fio's steady-state window counts whole seconds: rounded up, never shortened
    s = opts(fio.steady_argv(2**20, "/d", False, window_s=10, max_s=600))
    assert s["runtime"] == "600000ms" and s["ss_dur"] == "10" and s["ss_ramp"] == "3333ms"


def test_one_pass_and_fresh_file_workloads() -> None:
    o = opts(fio.argv(FioWorkload(name="W", rw="write", time_based=False, precondition="none"), "/d", False))
    assert o["time_based"] == "0" and o["unlink"] == "1" and o["filename"].endswith("-none.dat")


@pytest.mark.parametrize("size", [2**20, 64 * 2**20, 1536000, 3584 * 1024, 4096, 3 * 2**21 + 4096])
def test_precondition_block_divides_the_size_so_no_tail_is_left_unwritten(size: int) -> None:
    bs = int(opts(fio.precondition_argv(size, "/d", False))["bs"])
    assert size % bs == 0 and bs <= 2**20 and bs == math.gcd(size, 2**20)


# --- job files ------------------------------------------------------------------------------------

JOB_FILE = """
; a comment stays
[global]
ioengine=libaio
direct=1
directory=/somewhere/else

[seq-write]
rw=write
bs=1M
size=64M
filename=/etc/passwd

[rand-read]
stonewall
rw=randread
bs=4k
size=64M
numjobs=2
filename=shared.dat
time_based

[rand-read]
new_group
rw=read
opendir=/home
directory=sub
filename_format=../escape.$jobnum
"""


def sections(text: str) -> list[tuple[str, list[str]]]:
    """(section, its option lines) in order, duplicates kept, as fio reads them."""
    out: list[tuple[str, list[str]]] = []
    for line in (ln.strip() for ln in text.splitlines()):
        if line.startswith("["):
            out.append((line[1:-1], []))
        elif line and line[0] not in ";#":
            out[-1][1].append(line)
    return out


def test_job_file_is_pointed_at_the_directory_with_sections_and_groups_kept() -> None:
    text = fio.rewrite_job_file(JOB_FILE, "/data", path_is_device=False)
    assert fio.job_file_argv("/tmp/job.fio") == ["fio", "--output-format=json+", "/tmp/job.fio"]
    got = dict(enumerate(sections(text)))
    assert [name for name, _ in got.values()] == ["global", "seq-write", "rand-read", "rand-read"]
    assert got[0][1] == ["directory=/data", "ioengine=libaio", "direct=1"]
    assert got[1][1] == ["rw=write", "bs=1M", "size=64M"]  # an absolute filename would escape the placement
    assert got[2][1] == [
        "stonewall",
        "rw=randread",
        "bs=4k",
        "size=64M",
        "numjobs=2",
        "filename=shared.dat",
        "time_based",
    ]
    assert got[3][1] == ["new_group", "rw=read"]  # opendir, a relative directory and a '..' name all point elsewhere
    assert "; a comment stays" in text and "group_reporting" not in text


def test_job_file_on_a_device_names_only_the_device() -> None:
    text = fio.rewrite_job_file(JOB_FILE, "/dev/zram3", path_is_device=True)
    lines = [ln for _, opts_ in sections(text) for ln in opts_]
    assert [ln for ln in lines if ln.split("=")[0] in ("filename", "directory", "opendir")] == ["filename=/dev/zram3"]
    assert sections(text)[0][1][0] == "filename=/dev/zram3"


def test_job_file_without_a_leading_global_gets_one() -> None:
    text = fio.rewrite_job_file("[only]\nrw=read\n[global]\ndirectory=/x\n", "/data", False)
    assert sections(text) == [("global", ["directory=/data"]), ("only", ["rw=read"]), ("global", [])]


@pytest.mark.parametrize("bad", ["rw=read\n[job]\n", "[job\nrw=read\n"])
def test_malformed_job_files_are_refused_with_the_line(bad: str) -> None:
    with pytest.raises(fio.FioParseError, match="line 1"):
        fio.rewrite_job_file(bad, "/data", False)


def test_the_captured_job_file_was_rewritten_as_committed() -> None:
    source = (DATA / "jobfile-shared-file-duplicate-sections.fio").read_text()
    expected = (DATA / "jobfile-shared-file-duplicate-sections.rewritten.fio").read_text()
    assert fio.rewrite_job_file(source, "/tmp/lbfio/mnt/lb-data", False) == expected
