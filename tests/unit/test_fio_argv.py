from __future__ import annotations

import configparser

from layerbench.spec.models import FioWorkload
from layerbench.workloads import fio


def opts(argv: list[str]) -> dict[str, str]:
    return dict(a.removeprefix("--").split("=", 1) for a in argv[1:] if a.startswith("--") and "=" in a)


def test_workload_argv_shares_one_prefilled_file() -> None:
    w = FioWorkload(name="RR", rw="randread", bs="4k", numjobs=32, iodepth=32, size="512MiB", runtime_s=4)
    o = opts(fio.argv(w, "/mnt/x/lb-data", path_is_device=False))
    pre = opts(fio.precondition_argv(int(w.size), "/mnt/x/lb-data", path_is_device=False))
    assert o["filename"] == pre["filename"] == "/mnt/x/lb-data/lb-536870912.dat"
    assert o["bs"] == "4096" and o["numjobs"] == "32" and o["iodepth"] == "32"
    assert o["direct"] == "1" and o["overwrite"] == "0" and o["refill_buffers"] == "1"
    assert o["output-format"] == "json+" and o["time_based"] == "1"
    assert pre["rw"] == "write" and pre["refill_buffers"] == "1" and pre["direct"] == "1"


def test_device_target_uses_the_device_itself() -> None:
    w = FioWorkload(name="SR", rw="read", bs="128k")
    assert opts(fio.argv(w, "/dev/loop3", path_is_device=True))["filename"] == "/dev/loop3"
    assert opts(fio.precondition_argv(2**20, "/dev/loop3", path_is_device=True))["filename"] == "/dev/loop3"


def test_mixed_workload_passes_the_mix() -> None:
    w = FioWorkload(name="MIX", rw="randrw", rwmixread=70)
    assert opts(fio.argv(w, "/d", False))["rwmixread"] == "70"


JOB_FILE = """
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
"""


def test_job_file_is_pointed_at_the_placement_with_sections_and_groups_kept() -> None:
    text = fio.rewrite_job_file(JOB_FILE, "/data", path_is_device=False)
    assert fio.job_file_argv("/tmp/job.fio") == ["fio", "--output-format=json+", "/tmp/job.fio"]
    parser = configparser.ConfigParser(allow_no_value=True, interpolation=None)
    parser.read_string(text)
    assert parser.sections() == ["global", "seq-write", "rand-read"]
    assert parser["global"]["directory"] == "/data"
    assert "filename" not in parser["seq-write"]
    assert parser.has_option("rand-read", "stonewall")
    assert parser["rand-read"]["numjobs"] == "2"
