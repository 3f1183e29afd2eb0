"""The bottom two layers built for real: loop (direct I/O) and zram under ext4, xfs and btrfs.

Each case writes and reads back a file with O_DIRECT through the mount, then
checks from the outside (losetup, /proc/mounts, /sys/block) that nothing is left.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from layerbench import proc
from layerbench.errors import PrerequisiteError
from layerbench.spec.models import DeviceSpec, FilesystemSpec
from layerbench.stack.device import device
from layerbench.stack.filesystem import filesystem
from layerbench.stack.ledger import Ledger
from layerbench.stack.target import BuildContext, Device, Mount

pytestmark = pytest.mark.requires_root

MIB = 2**20
FILESYSTEMS = {
    "ext4": FilesystemSpec(type="ext4", mount_options=("dioread_nolock",)),
    "xfs": FilesystemSpec(type="xfs"),
    "btrfs-nodatacow": FilesystemSpec(type="btrfs", mount_options=("nodatacow",)),
}


@pytest.fixture
def ctx(tmp_path: Path) -> Iterator[BuildContext]:
    ledger = Ledger(tmp_path / "state" / "ledger.db", "test")
    work = tmp_path / "work"
    work.mkdir(mode=0o700)
    try:
        yield BuildContext(work_dir=work, ledger=ledger, run_id="test", runner=proc.run)
        assert ledger.live() == [], "the ledger still lists a resource as live"
    finally:
        ledger.close()


def size_for(fs: str) -> int:
    return (320 if fs == "xfs" else 256) * MIB  # mkfs.xfs 6.x refuses anything under 300 MB


@pytest.mark.parametrize("kind", ["loop", "zram"])
@pytest.mark.parametrize("fs", list(FILESYSTEMS))
def test_build_use_and_tear_down(ctx: BuildContext, kind: str, fs: str, tmp_path: Path) -> None:
    spec = DeviceSpec(kind=kind, size=size_for(fs))
    with device(spec, ctx) as dev, filesystem(dev, FILESYSTEMS[fs], ctx) as mnt:
        check_device(dev, spec)
        assert mnt.mountpoint is not None and mnt.info["effective"]
        if fs.startswith("btrfs"):
            assert "nodatacow" in mnt.info["effective"].split(",")
        round_trip_direct(mnt, tmp_path)
    assert_gone(dev, mnt)


def check_device(dev: Device, spec: DeviceSpec) -> None:
    if dev.kind == "loop":
        assert dev.info["direct_io"] is True
        backing = os.stat(dev.info["backing_file"])
        # Still fully allocated after mkfs: its discard would have punched holes into the file.
        assert backing.st_blocks * 512 >= spec.size
    else:
        algos = Path(f"/sys/block/{Path(dev.path).name}/comp_algorithm").read_text()
        assert f"[{dev.info['comp_algorithm']}]" in algos


def round_trip_direct(mnt: Mount, tmp_path: Path) -> None:
    data = tmp_path / "data.bin"
    data.write_bytes(os.urandom(4 * MIB))
    inside = Path(str(mnt.mountpoint)) / "f.bin"
    back = tmp_path / "back.bin"
    proc.run(["dd", f"if={data}", f"of={inside}", "bs=1M", "oflag=direct", "conv=fsync", "status=none"]).check()
    proc.run(["dd", f"if={inside}", f"of={back}", "bs=1M", "iflag=direct", "status=none"]).check()
    assert hashlib.sha256(back.read_bytes()).digest() == hashlib.sha256(data.read_bytes()).digest()


def assert_gone(dev: Device, mnt: Mount) -> None:
    mounts = Path("/proc/mounts").read_text()
    assert str(mnt.mountpoint) not in mounts and not Path(str(mnt.mountpoint)).exists()
    if dev.kind == "loop":
        backing = dev.info["backing_file"]
        assert not Path(backing).exists()
        assert backing not in attached_files()
    else:
        assert not Path(f"/sys/block/{Path(dev.path).name}").exists()


def test_loop_without_direct_io_says_so(ctx: BuildContext) -> None:
    with device(DeviceSpec(kind="loop", size="64MiB", direct_io=False), ctx) as dev:
        assert dev.info["direct_io"] is False
        with filesystem(dev, FilesystemSpec(type="none"), ctx) as mnt:
            assert mnt.fs_type == "none" and mnt.mountpoint is None and mnt.device is dev


def test_mounted_device_is_never_formatted(ctx: BuildContext, tmp_path: Path) -> None:
    target = tmp_path / "theirs"
    target.mkdir()
    with device(DeviceSpec(kind="loop", size="64MiB"), ctx) as dev:
        proc.run(["mkfs.ext4", "-F", "-q", dev.path]).check()
        proc.run(["mount", dev.path, str(target)]).check()
        try:
            (target / "precious").write_text("keep me")
            with pytest.raises(PrerequisiteError, match="mounted"), filesystem(dev, FilesystemSpec(type="xfs"), ctx):
                pytest.fail("filesystem() went ahead on a mounted device")
            with (
                pytest.raises(PrerequisiteError, match="mounted"),
                device(DeviceSpec(kind="block", path=dev.path), ctx),
            ):
                pytest.fail("device() accepted a mounted block device")
            assert (target / "precious").read_text() == "keep me"
        finally:
            proc.run(["umount", str(target)]).check()
        # Unmounted, the same device is the user's to lend: used, not removed.
        with device(DeviceSpec(kind="block", path=dev.path), ctx) as theirs:
            assert theirs.size_bytes == 64 * MIB
        assert dev.info["backing_file"] in attached_files()


def attached_files() -> str:
    return proc.run(["losetup", "--list", "--noheadings", "--output", "BACK-FILE"]).check().stdout
