"""Each layer built for real, a short real fio on top, and nothing left after."""

from __future__ import annotations

from pathlib import Path

import pytest

from layerbench import proc
from layerbench.run.kinds.single import workload_argv
from layerbench.spec.models import FioWorkload, StackSpec
from layerbench.stack.build import StackBuilder
from layerbench.stack.ledger import Ledger
from layerbench.stack.target import BuildContext
from layerbench.workloads import fio
from tests.integration.leftovers import leftovers

pytestmark = [pytest.mark.requires_root, pytest.mark.requires_fio]

SMALL = FioWorkload(name="RR", rw="randread", bs="4k", iodepth=8, size="32MiB", runtime_s=1, ramp_s=0)
DEVICE = {"kind": "loop", "size": "384MiB"}


def stack(**fields: object) -> StackSpec:
    return StackSpec.model_validate(
        {"device": DEVICE, "filesystem": "none", "engine": "native", "placement": "raw", **fields}
    )


@pytest.fixture
def ctx(tmp_path: Path):
    ledger = Ledger(tmp_path / "state" / "ledger.db", "itest")
    work = tmp_path / "work"
    work.mkdir()
    yield BuildContext(work_dir=work, ledger=ledger, run_id="itest", runner=proc.run)
    assert ledger.live() == [], "a resource was not removed"
    assert leftovers(work) == []


def run_fio_on(builder: StackBuilder, s: StackSpec) -> fio.FioDirection:
    target = builder.enter(s, int(SMALL.size))
    target.run(fio.precondition_argv(int(SMALL.size), target.path, target.path_is_device), 120).check()
    done = target.run(workload_argv(SMALL, target), 120).check()
    return fio.parse(done.stdout).jobs[0].directions["read"]


NATIVE = [
    stack(),
    stack(device={"kind": "zram", "size": "256MiB"}),
    stack(filesystem={"type": "ext4", "mount_options": ["dioread_nolock"]}, placement="host-dir"),
    stack(filesystem="xfs", placement="host-dir"),
    stack(filesystem={"type": "btrfs", "mount_options": ["nodatacow"]}, placement="host-dir"),
]


@pytest.mark.parametrize("s", NATIVE, ids=[s.label() for s in NATIVE])
def test_native_layers(ctx: BuildContext, s: StackSpec) -> None:
    with StackBuilder(ctx) as builder:
        read = run_fio_on(builder, s)
        assert read.iops > 0 and read.io_bytes > 0
        mount = builder._layers[1].value
        if s.filesystem.type == "btrfs":  # ext4 hides dioread_nolock: it is its default now
            assert "nodatacow" in mount.info["effective"]


DOCKER = [
    stack(filesystem="xfs", engine="docker:overlay2", placement=p)
    for p in ("writable-layer", "volume", "bind", "tmpfs")
] + [
    stack(filesystem="btrfs", engine="docker:btrfs", placement="writable-layer"),
    stack(filesystem="ext4", engine="docker:vfs", placement="writable-layer"),
    stack(filesystem="xfs", engine="docker:fuse-overlayfs", placement="writable-layer"),
]


@pytest.mark.requires_docker
def test_docker_layers_share_the_daemon_and_leave_nothing(ctx: BuildContext) -> None:
    with StackBuilder(ctx) as builder:
        daemons = set()
        for s in DOCKER:
            read = run_fio_on(builder, s)
            assert read.iops > 0, s.label()
            engine = builder._layers[2].value.docker
            daemons.add(engine.pid)
            assert engine.info["Driver"] == s.engine.driver
        assert len(daemons) == 4  # one daemon per driver: overlay2's four placements shared one


# Seed 000's ext4 pair at high load (xu-local-storage's RR-H and RW-H at once: 4 jobs x QD32, reads and
# writes). Since Linux 5.6 dioread_nolock is ext4's default: "without" is nodioread_nolock, said so.
HIGH = FioWorkload(name="RW-H", rw="randrw", bs="4k", numjobs=4, iodepth=32, size="32MiB", runtime_s=1, ramp_s=0)


@pytest.mark.parametrize("option", ["dioread_nolock", "nodioread_nolock"])
def test_ext4_with_and_without_dioread_nolock_at_high_load(ctx: BuildContext, option: str) -> None:
    fs = {"type": "ext4", "mount_options": [option]}
    s = stack(device={"kind": "zram", "size": "256MiB"}, filesystem=fs, placement="host-dir")
    with StackBuilder(ctx) as builder:
        target = builder.enter(s, int(HIGH.size))
        target.run(fio.precondition_argv(int(HIGH.size), target.path, target.path_is_device), 300).check()
        done = target.run(workload_argv(HIGH, target), 300).check()
        jobs = fio.parse(done.stdout).jobs
        # The four jobs, reported as one group, read and wrote (an empty list would pass all() alone).
        assert jobs and all(j.directions["read"].io_bytes > 0 and j.directions["write"].io_bytes > 0 for j in jobs)
        # What the kernel applied, not what was asked: the off switch shows in the mount table.
        effective = builder._layers[1].value.info["effective"]
        assert ("nodioread_nolock" in effective) == (option == "nodioread_nolock"), effective
