"""Files that cannot fit on a stack's device are refused before anything runs, with the numbers."""

from __future__ import annotations

from pathlib import Path

import yaml

from layerbench.spec.feasibility import HostCaps
from layerbench.spec.load import validate
from layerbench.spec.matrix import Matrix, expand
from layerbench.workloads import footprint

# A peer's job file: two jobs of 2 GiB each, files of their own.
PEER_JOB = """
[global]
ioengine=libaio
direct=1
size=2g
[writer]
rw=write
numjobs=2
"""


def matrix(caps: HostCaps, tmp: Path, workloads: list, device_size: str = "5GiB", stacks: list | None = None) -> Matrix:
    job = tmp / "peer.fio"
    job.write_text(PEER_JOB)
    data = {
        "name": "space",
        "device": {"kind": "loop", "size": device_size},
        "stacks": stacks or [{"filesystem": "ext4", "engine": "native", "placement": "host-dir"}],
        "workloads": [w if "rw" in w or "kind" in w else {**w, "job_file": str(job)} for w in workloads],
    }
    exp = validate(yaml.safe_load(yaml.safe_dump(data)))
    return expand(exp, caps, lambda s, c: None, footprint.files, footprint.USABLE_SHARE)  # every stack buildable


def test_the_peers_spec_is_refused_with_the_numbers(full_caps: HostCaps, tmp_path: Path) -> None:
    m = matrix(full_caps, tmp_path, [{"name": "PEER"}, {"name": "BIG", "rw": "read", "size": "1GiB"}])
    assert [c.workload.name for c in m.cells] == ["PEER"]  # 4 GiB fit in about 4.5
    (refused,) = m.refused
    assert refused.cell.workload.name == "BIG"
    assert "1.00 GiB" in refused.reason and "beside the 4.00 GiB" in refused.reason
    assert "a 5.00 GiB ext4 holds about 4.50 GiB" in refused.reason


def test_workloads_sharing_a_file_count_it_once(full_caps: HostCaps, tmp_path: Path) -> None:
    names = [("RR", "randread"), ("SR", "read"), ("RW", "randwrite")]
    same = [{"name": n, "rw": rw, "size": "2GiB"} for n, rw in names]
    assert len(matrix(full_caps, tmp_path, same).cells) == 3  # one 2 GiB fill, read by all three


def test_each_stack_holds_its_own_files(full_caps: HostCaps, tmp_path: Path) -> None:
    stacks = [{"filesystem": ["ext4", "xfs"], "engine": "native", "placement": "host-dir"}]
    m = matrix(full_caps, tmp_path, [{"name": "A", "rw": "read", "size": "3GiB"}], stacks=stacks)
    assert len(m.cells) == 2 and not m.refused


def test_a_raw_region_larger_than_the_device(full_caps: HostCaps, tmp_path: Path) -> None:
    stacks = [{"filesystem": "none", "placement": "raw"}]
    m = matrix(full_caps, tmp_path, [{"name": "A", "rw": "read", "size": "3GiB"}], device_size="2GiB", stacks=stacks)
    assert "larger than the 2.00 GiB device" in m.refused[0].reason


def test_job_file_sizes() -> None:
    assert footprint.job_file_bytes(PEER_JOB) == {"[writer]": 4 * 2**30}
    shared = "[a]\nfilename=x.dat\nsize=1g\nnumjobs=4\n[b]\nfilename=x.dat\nsize=512m\n"
    assert footprint.job_file_bytes(shared) == {"file x.dat": 2**30}  # one file, its clones share it
    many = "[global]\nnrfiles=8\nfilesize=4k-64k\n[small]\nrw=write\n"
    assert footprint.job_file_bytes(many) == {"[small]": 8 * 64 * 2**10}


def test_personalities_count_their_files() -> None:
    spec = {"name": "p", "stacks": [{}], "workloads": [{"name": "F", "personality": "fileserver-like"}]}
    sizes = footprint.files(validate(spec).workloads[0])
    assert sizes and all(v > 0 for v in sizes.values())
