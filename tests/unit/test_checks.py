from __future__ import annotations

import os
from pathlib import Path

from layerbench.analysis.checks import SUSPECT_SINGLE_RATIO, faster_than_baseline, noisy, not_beneath
from layerbench.analysis.overhead import physics
from layerbench.analysis.stats import ratio
from layerbench.run.measure.checks import (
    DATABASE_REMEDY,
    CpuLoad,
    accounting_blind,
    bottleneck,
    clock_bound,
    contended,
    cpu_limit,
    cpuset_size,
    device_accounting,
)
from layerbench.run.measure.monitor import devices_beneath
from layerbench.spec.models import Cell, FioWorkload, StackSpec
from layerbench.store.read import StoredCell
from tests.unit.stored import stored_cell

MiB = 2**20


def test_device_accounting_flags_a_cache_hit_and_passes_a_real_read() -> None:
    cached = device_accounting("vda", fio_read=1024 * MiB, fio_written=0, dev_read=3 * MiB, dev_written=0)
    assert cached.status == "flag" and "page cache" in cached.detail and "vda" in cached.detail
    real = device_accounting("vda", fio_read=1024 * MiB, fio_written=0, dev_read=1030 * MiB, dev_written=0)
    assert real.status == "pass"
    assert "fio read 1024 MiB, vda read 1030 MiB (101%)" in real.detail  # the figures, as a flag gives them


def test_write_amplification_is_not_a_flag() -> None:
    assert device_accounting("loop3", 0, 100 * MiB, 0, 180 * MiB).status == "pass"


def test_noisy_says_what_to_do() -> None:
    flag = noisy(cv=0.2, n=5)
    assert flag.status == "flag" and "repetitions" in flag.detail
    assert noisy(cv=0.03, n=5).status == "pass"
    assert noisy(cv=0.0, n=1).status == "skip"


def stack(**fields: object) -> StackSpec:
    return StackSpec.model_validate({"device": {"kind": "loop"}, "filesystem": "ext4", "engine": "native", **fields})


NATIVE = stack(placement="host-dir")
RAW = stack(filesystem="none", placement="raw")
DOCKER = stack(engine="docker:overlay2", placement="volume")


def test_faster_than_physics() -> None:
    assert faster_than_baseline(1.5, 1.4, (3, 3), "raw device", touches_device=True).status == "flag"
    assert faster_than_baseline(1.5, 1.4, (3, 3), "raw device", touches_device=False).status == "pass"
    assert faster_than_baseline(1.0, 0.9, (3, 3), "raw device", touches_device=True).status == "pass"
    assert faster_than_baseline(1.2, float("nan"), (1, 1), "raw device", touches_device=True).status == "skip"


def test_a_bound_is_the_same_storage_through_fewer_layers() -> None:
    assert not_beneath(DOCKER, NATIVE) is None  # a container placement against native on the same filesystem
    assert not_beneath(NATIVE, RAW) is None and not_beneath(DOCKER, RAW) is None  # anything over its raw device
    assert not_beneath(stack(device={"kind": "loop", "direct_io": False}, placement="host-dir"), NATIVE) is None
    assert not_beneath(stack(engine="docker:overlay2", placement="writable-layer"), DOCKER) is None


def test_no_bound_where_the_cell_may_honestly_be_faster() -> None:
    xfs = stack(filesystem="xfs", placement="host-dir")
    assert "another filesystem" in (not_beneath(xfs, NATIVE) or "")
    db = {"server": "postgres", "placement": "host-dir"}
    assert "instance" in (not_beneath(stack(**db, instances=4), stack(**db)) or "")  # 4 servers beat 1 honestly
    assert "another device" in (not_beneath(stack(device={"kind": "zram"}, placement="host-dir"), NATIVE) or "")
    limited = stack(engine="docker:overlay2", placement="volume", limits={"cpus": 1})
    assert "limits" in (not_beneath(DOCKER, limited) or "")
    assert not_beneath(limited, NATIVE) is None  # a limit only slows the cell down
    assert "layers" in (not_beneath(NATIVE, NATIVE) or "")
    skip = faster_than_baseline(2.0, 1.8, (3, 3), "ext4", True, not_beneath(xfs, NATIVE))
    assert skip.status == "skip" and "another filesystem" in skip.detail


def test_no_interval_says_why_with_the_trials_it_had() -> None:
    single = faster_than_baseline(1.8, float("nan"), (1, 1), "raw", touches_device=True)
    assert single.status == "flag" and "in a single trial" in single.detail
    # n >= 2 each, but the baseline's own interval includes zero (Fieller's g >= 1): not "a single trial".
    wide = faster_than_baseline(1.8, float("nan"), (3, 3), "raw", touches_device=True)
    assert wide.status == "flag" and "single" not in wide.detail and "over 3 and 3 trials" in wide.detail
    assert faster_than_baseline(1.2, float("nan"), (3, 3), "raw", touches_device=True).status == "skip"


def test_bottleneck() -> None:
    assert bottleneck(CpuLoad(97.0), 20.0).status == "flag"
    assert bottleneck(CpuLoad(97.0), 99.0).status == "pass"
    assert bottleneck(CpuLoad(40.0), 10.0).status == "pass"
    blind = bottleneck(CpuLoad(97.0), None)  # a claim's device is not on this host: the CPU alone decides
    assert blind.status == "flag" and "the device's utilization was unknown (it is not on this host)" in blind.detail


def test_one_saturated_core_among_sixteen_is_a_bottleneck() -> None:
    # One fio job holding one core of sixteen: the host reads 6%, which alone passed.
    one_core = CpuLoad(6.3, ("cpu11", 99.0))
    flag = bottleneck(one_core, 12.0)
    assert flag.status == "flag" and "cpu11 99% busy" in flag.detail
    assert bottleneck(CpuLoad(6.3, ("cpu11", 40.0)), 12.0).status == "pass"


def test_a_container_at_its_cpu_limit_is_a_bottleneck() -> None:
    capped = CpuLoad(30.0, ("cpu0", 60.0), {"i0": (0.97, cpu_limit({"cpus": 1.0}))})
    flag = bottleneck(capped, 20.0, DATABASE_REMEDY)
    assert flag.status == "flag" and "container i0 used 0.97 of its 1 CPUs" in flag.detail
    pinned = CpuLoad(30.0, None, {"": (1.9, cpu_limit({"cpuset": "0-1"}))})
    assert bottleneck(pinned, 20.0).status == "flag"
    free = CpuLoad(30.0, None, {"i0": (0.97, cpu_limit({}))})  # no limit: the host's share decides
    assert bottleneck(free, 20.0).status == "pass"
    assert cpuset_size("0-3,6") == 5 and cpu_limit({"cpus": 2.0, "cpuset": "0"}) == 1.0


def test_contended_names_the_busy_processes_and_why_containers_suffer() -> None:
    busy = contended(0.98, 2, {"sha256sum": 0.97, "java": 0.01})
    assert busy.status == "flag" and "sha256sum 0.97" in busy.detail and "not to be trusted" in busy.detail
    assert "one entity" in busy.detail  # CFS group scheduling: the reason containers lose more
    assert contended(0.1, 2, {"sshd": 0.1}).status == "pass"
    assert contended(1.0, 16, {"make": 1.0}).status == "pass"  # a tenth of sixteen cores is 1.6


def row(s: StackSpec, cell_id: str) -> StoredCell:
    return stored_cell(Cell(stack=s, workload=FioWorkload(name="RR")), cell_id, "base")


def test_the_caller_judges_against_the_cell_s_own_baseline_and_counts_its_trials() -> None:
    # Three trials each, the baseline so spread that its interval includes zero: Fieller gives no interval.
    r = ratio([300.0, 310.0, 305.0], [1.0, 400.0, 2.0])
    assert r.ci_low != r.ci_low and r.ratio > SUSPECT_SINGLE_RATIO
    fast = physics(row(DOCKER, "c"), row(NATIVE, "base"), r, (3, 3))
    assert fast.status == "flag" and "single" not in fast.detail
    assert physics(row(stack(filesystem="xfs", placement="host-dir"), "c"), row(NATIVE, "base"), r, (3, 3)).status == (
        "skip"
    )


def fake_sys(tmp_path: Path, disk_known: bool) -> Path:
    """A /sys with loop9 over a real file; ``disk_known``: the file's device is a block device there."""
    tmp_path.mkdir()
    backing = tmp_path / "backing.img"
    backing.write_bytes(b"\0" * 4096)
    sys_root = tmp_path / "sys"
    (sys_root / "block" / "loop9" / "loop").mkdir(parents=True)
    (sys_root / "block" / "loop9" / "loop" / "backing_file").write_text(f"{backing}\n")
    (sys_root / "dev" / "block").mkdir(parents=True)
    if disk_known:
        st = os.stat(backing)
        (sys_root / "devices" / "vdz").mkdir(parents=True)
        (sys_root / "dev" / "block" / f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}").symlink_to(
            sys_root / "devices" / "vdz"
        )
    return sys_root


def test_accounting_sees_through_a_loop_device_only_to_a_disk_under_its_file(tmp_path: Path) -> None:
    seen = devices_beneath("/dev/loop9", fake_sys(tmp_path / "a", disk_known=True))
    assert seen == ["loop9", "vdz"] and accounting_blind(seen, loop=True, counted={"loop9", "vdz"}) is None
    blind = devices_beneath("/dev/loop9", fake_sys(tmp_path / "b", disk_known=False))
    assert blind == ["loop9"]
    why = accounting_blind(blind, loop=True, counted={"loop9"})
    assert why is not None and "invisible" in why  # skipped, never a pass from the loop device's own counters
    assert accounting_blind(["zram1"], loop=False, counted={"zram1"}) is None  # nothing beneath zram
    assert accounting_blind(["loop9", "vdz"], loop=True, counted={"loop9"}) == "no counters for vdz"


def test_too_few_bytes_to_account_is_a_skip_not_a_pass() -> None:
    assert device_accounting("vda", fio_read=4 * MiB, fio_written=0, dev_read=0, dev_written=0).status == "skip"


def test_clock_bound_flags_cells_at_the_resolution_and_says_why() -> None:
    flagged = clock_bound(["64k/32k read", "64k/32k reread", "64k/64k read", "128k/64k reread"], 75, 1e-6)
    assert flagged.status == "flag"
    assert "4 of 75 cells (64k/32k read, 64k/32k reread, 64k/64k read and 1 more)" in flagged.detail
    assert "1 µs" in flagged.detail and "ceiling" in flagged.detail
    assert clock_bound([], 75, 1e-6).status == "pass"
    assert clock_bound([], 75, None).status == "skip"
