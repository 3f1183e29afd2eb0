"""The checks that keep layerbench from formatting a device something uses."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from layerbench import proc
from layerbench.errors import PrerequisiteError
from layerbench.proc import Completed, FakeRunner
from layerbench.spec.models import DeviceSpec, FilesystemSpec
from layerbench.stack.device import device, fill_argvs, holders_of, unsafe_reason, why_unsafe
from layerbench.stack.filesystem import mkfs_argv
from layerbench.stack.ledger import Ledger
from layerbench.stack.target import BuildContext

# Captured from Debian hosts, trimmed.
MOUNTS = """\
sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0
proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0
udev /dev devtmpfs rw,nosuid,relatime,size=8133332k,nr_inodes=2033333,mode=755 0 0
/dev/nvme0n1p2 / ext4 rw,relatime,errors=remount-ro 0 0
/dev/nvme0n1p1 /boot/efi vfat rw,relatime,fmask=0077,dmask=0077,codepage=437 0 0
/dev/sdb /srv/my\\040data xfs rw,relatime,attr2,inode64,logbufs=8,logbsize=32k,noquota 0 0
/dev/loop10 /snap/core/1 squashfs ro,nodev,relatime 0 0
tmpfs /run tmpfs rw,nosuid,nodev,noexec,relatime,size=1632828k,mode=755 0 0
overlay /var/lib/docker/overlay2/abc/merged overlay rw,relatime,lowerdir=/a,upperdir=/b,workdir=/c 0 0
"""
SWAPS = """\
Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority
/dev/sdc2                               partition\t8388604\t\t0\t\t-2
/swapfile                               file\t\t2097148\t\t0\t\t-3
"""
NO_SWAPS = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"


def test_mounted_device_refused() -> None:
    assert why_unsafe("/dev/sdb", MOUNTS, NO_SWAPS, []) == "/dev/sdb is mounted on /srv/my data"


@pytest.mark.parametrize("disk", ["/dev/nvme0n1", "/dev/nvme0n1p2"])
def test_mounted_partition_of_a_disk_refused(disk: str) -> None:
    reason = why_unsafe(disk, MOUNTS, NO_SWAPS, [])
    assert reason is not None and "/dev/nvme0n1p" in reason and "mounted" in reason


def test_swap_partition_refused() -> None:
    assert why_unsafe("/dev/sdc", MOUNTS, SWAPS, []) == "/dev/sdc2 is an active swap device"
    assert why_unsafe("/dev/sdc2", MOUNTS, SWAPS, []) == "/dev/sdc2 is an active swap device"


def test_holders_refused() -> None:
    reason = why_unsafe("/dev/sdd", MOUNTS, NO_SWAPS, ["md0", "dm-3"])
    assert reason is not None and "dm-3, md0" in reason


@pytest.mark.parametrize("dev", ["/dev/sdd", "/dev/loop1", "/dev/nvme0n10", "/dev/sd"])
def test_clean_device_accepted(dev: str) -> None:
    # loop1 is not loop10's disk and nvme0n10 is not nvme0n1p*: names that share a prefix are other devices.
    assert why_unsafe(dev, MOUNTS, SWAPS, []) is None


def test_not_a_block_device(tmp_path: Path) -> None:
    plain = tmp_path / "disk.img"
    plain.write_bytes(b"\0" * 4096)
    assert unsafe_reason(str(plain)) == "not a block device"
    assert unsafe_reason(str(tmp_path / "absent")) == "no such device"
    assert holders_of(str(tmp_path / "absent")) == []


def test_loop_file_written_in_whole_blocks_without_the_page_cache() -> None:
    argvs = fill_argvs(Path("/w/f.img"), 3 * 2**20 + 8192)
    assert argvs[0][-2:] == ["bs=1M", "count=3"]
    assert argvs[1][-3:] == ["bs=4096", "count=2", "seek=768"]
    assert all("oflag=direct" in a and "conv=notrunc,fsync" in a for a in argvs)


def test_ext4_extended_options_merged_and_discard_kept_off_loop_files() -> None:
    spec = FilesystemSpec(type="ext4", mkfs_options=("-E", "stride=16", "-b", "4096"))
    argv = mkfs_argv(spec, "/dev/loop9", nodiscard=True)
    # mke2fs keeps only the last -E: one -E carries ours and the spec's.
    assert argv.count("-E") == 1
    assert argv[argv.index("-E") + 1] == "lazy_itable_init=0,lazy_journal_init=0,nodiscard,stride=16"
    assert argv[-3:] == ["-b", "4096", "/dev/loop9"]
    assert "-K" in mkfs_argv(FilesystemSpec(type="xfs"), "/dev/loop9", nodiscard=True)
    assert "-K" not in mkfs_argv(FilesystemSpec(type="btrfs"), "/dev/zram3")
    assert mkfs_argv(FilesystemSpec(type="xfs", mkfs_options=("-n", "ftype=0")), "/dev/x").count("-n") == 1


def test_loop_refused_direct_io_is_an_error_and_leaves_nothing(tmp_path: Path) -> None:
    # Real dd writes the file; losetup is faked with a device whose sysfs has no dio flag set.
    fake = FakeRunner({"losetup": (0, "/dev/loop-fake\n", "")})

    def runner(argv: Sequence[str], **kw: Any) -> Completed:
        return proc.run(argv, **kw) if argv[0] == "dd" else fake(argv, **kw)

    ledger = Ledger(tmp_path / "ledger.db", "unit")
    ctx = BuildContext(work_dir=tmp_path, ledger=ledger, run_id="unit", runner=runner)
    with pytest.raises(PrerequisiteError, match="refused direct I/O"), device(DeviceSpec(size="1MiB"), ctx):
        pytest.fail("a loop device without direct I/O was handed out")
    assert ["losetup", "--detach", "/dev/loop-fake"] in fake.calls
    assert list(tmp_path.glob("loop-*.img")) == [] and ledger.live() == []
    ledger.close()
