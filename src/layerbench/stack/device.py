"""The bottom layer: a loop device, a zram device, or a block device the user named.

A loop file is written in full before it is attached (a hole or an unwritten
extent reads as zeros without touching the disk), and attached with direct
I/O so the host page cache does not answer for the disk. A device the user
named is checked, never created or removed: it is theirs.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from layerbench.errors import PrerequisiteError, SpecError, TeardownError, ToolError
from layerbench.spec.models import DeviceSpec
from layerbench.stack.ledger import tracked
from layerbench.stack.target import BuildContext, Device

MIB = 2**20
ALIGN = 4096  # O_DIRECT writes and every filesystem we make need whole 4 KiB blocks
ZRAM_CONTROL = Path("/sys/class/zram-control")
SYS_BLOCK = Path("/sys/class/block")


@contextmanager
def device(spec: DeviceSpec, ctx: BuildContext) -> Iterator[Device]:
    """The device ``spec`` describes, removed again on exit (unless the user named it)."""
    with BUILDERS[spec.kind](spec, ctx) as dev:
        yield dev


# --- loop -------------------------------------------------------------------


@contextmanager
def loop_device(spec: DeviceSpec, ctx: BuildContext) -> Iterator[Device]:
    size = _checked_size(spec)
    backing = ctx.work_dir / f"loop-{uuid.uuid4().hex[:8]}.img"
    with written_file(backing, size, ctx), attached_loop(backing, size, spec.direct_io, ctx) as dev:
        yield dev


@contextmanager
def written_file(path: Path, size: int, ctx: BuildContext) -> Iterator[Path]:
    """A new file of ``size`` bytes, every one written (no holes), removed on exit."""

    def create_file(rid: int) -> Path:
        # O_EXCL: a name collision must fail, never overwrite (or then delete) someone's file.
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        try:
            return _fill(path, size, ctx)
        except BaseException:
            path.unlink(missing_ok=True)
            ctx.ledger.removed(rid)  # known gone: nothing for cleanup to chase
            raise

    with tracked(ctx.ledger, "file", str(path), create_file, _unlink) as made:
        yield made


@contextmanager
def attached_loop(backing: Path, size: int, direct_io: bool, ctx: BuildContext) -> Iterator[Device]:
    """A loop device over ``backing`` (a file that exists), detached on exit."""
    with tracked(
        ctx.ledger,
        "loop",
        str(backing),
        lambda rid: _attach(backing, direct_io, size, rid, ctx),
        lambda dev: _detach(dev, ctx),
        backing=str(backing),
    ) as dev:
        if direct_io and not dev.info["direct_io"]:
            raise PrerequisiteError(
                f"{dev.path}: the kernel refused direct I/O on {backing}",
                hint="put the work directory on a filesystem whose block size allows O_DIRECT (ext4, xfs)",
            )
        yield dev


def fill_argvs(path: Path, size: int) -> list[list[str]]:
    """dd commands that write every byte of ``path`` (already created), bypassing the page cache."""
    mib, rest = divmod(size, MIB)
    common = ["if=/dev/zero", f"of={path}", "oflag=direct", "conv=notrunc,fsync", "status=none"]
    argvs = []
    if mib:
        argvs.append(["dd", *common, "bs=1M", f"count={mib}"])
    if rest:
        argvs.append(["dd", *common, f"bs={ALIGN}", f"count={rest // ALIGN}", f"seek={mib * MIB // ALIGN}"])
    return argvs


def _checked_size(spec: DeviceSpec) -> int:
    size = int(spec.size)
    if size < MIB or size % ALIGN:
        raise SpecError(f"device.size {size} bytes: a {spec.kind} device needs at least 1 MiB, in whole 4 KiB blocks")
    return size


def _fill(path: Path, size: int, ctx: BuildContext) -> Path:
    for argv in fill_argvs(path, size):
        ctx.runner(argv, timeout=max(120.0, size / (10 * MIB))).check()
    st = os.stat(path)
    if st.st_size != size or st.st_blocks * 512 < size:
        raise PrerequisiteError(
            f"{path}: {st.st_blocks * 512} of {size} bytes allocated after writing it in full",
            hint="the work directory's filesystem stores zeros as holes (compression or dedup); use ext4 or xfs",
        )
    return path


def _unlink(path: Path) -> None:
    path.unlink(missing_ok=True)


def _attach(backing: Path, direct_io: bool, size: int, rid: int, ctx: BuildContext) -> Device:
    dio = "on" if direct_io else "off"
    argv = ["losetup", "--find", "--show", f"--direct-io={dio}", str(backing)]
    try:
        done = ctx.runner(argv, timeout=60).check()
    except BaseException:
        _detach_backing(backing, ctx)  # --find may have bound a device before failing
        ctx.ledger.removed(rid)
        raise
    path = done.stdout.strip()
    ctx.ledger.update(rid, ident=path, backing=str(backing))
    info = {"backing_file": str(backing), "direct_io": loop_dio(path), "losetup_stderr": done.stderr.strip()}
    return Device(path, "loop", size, info)


def loop_dio(dev_path: str) -> bool:
    """Whether the kernel really does direct I/O on this loop device (it may refuse silently)."""
    flag = Path("/sys/block") / os.path.basename(dev_path) / "loop" / "dio"
    return flag.exists() and flag.read_text().strip() == "1"


def _detach(dev: Device, ctx: BuildContext) -> None:
    _retry(lambda: ctx.runner(["losetup", "--detach", dev.path], timeout=60).check())


def _detach_backing(backing: Path, ctx: BuildContext) -> None:
    if not backing.exists():
        return
    listed = ctx.runner(["losetup", "--associated", str(backing)], timeout=30).stdout
    for line in listed.splitlines():
        ctx.runner(["losetup", "--detach", line.split(":", 1)[0]], timeout=60).check()


# --- zram -------------------------------------------------------------------


@contextmanager
def zram_device(spec: DeviceSpec, ctx: BuildContext) -> Iterator[Device]:
    size = _checked_size(spec)

    def create(rid: int) -> Device:
        num = _hot_add(ctx)
        ctx.ledger.update(rid, ident=f"/dev/zram{num}", num=num)
        try:
            return _configure_zram(num, size)
        except BaseException:
            remove_zram(Device(f"/dev/zram{num}", "zram", size))
            ctx.ledger.removed(rid)
            raise

    with tracked(ctx.ledger, "zram", "zram-pending", create, remove_zram) as dev:
        yield dev


def _hot_add(ctx: BuildContext) -> str:
    if not (ZRAM_CONTROL / "hot_add").exists():
        # num_devices=0: loading the module must not create a zram0 nobody owns.
        # No modprobe at all is answered below, by the missing control file.
        with contextlib.suppress(ToolError):
            ctx.runner(["modprobe", "zram", "num_devices=0"], timeout=30)
    if not (ZRAM_CONTROL / "hot_add").exists():
        raise PrerequisiteError("this kernel has no zram", hint="use a loop device, or a kernel with CONFIG_ZRAM")
    num = (ZRAM_CONTROL / "hot_add").read_text().strip()
    if not num.isdigit():
        raise PrerequisiteError(f"zram hot_add answered {num!r}, not a device number")
    return num


def _configure_zram(num: str, size: int) -> Device:
    sysdir = Path(f"/sys/block/zram{num}")
    offered = (sysdir / "comp_algorithm").read_text().split()  # "lzo-rle [lzo] lz4": [current]
    names = [a.strip("[]") for a in offered]
    current = next((a.strip("[]") for a in offered if a.startswith("[")), None)
    if current is None:
        raise PrerequisiteError(f"{sysdir}/comp_algorithm names no current algorithm: {offered}")
    algo = "lz4" if "lz4" in names else current
    # The algorithm can only change before disksize initialises the device.
    (sysdir / "comp_algorithm").write_text(algo)
    (sysdir / "disksize").write_text(str(size))
    return Device(f"/dev/zram{num}", "zram", size, {"comp_algorithm": algo, "zram_num": int(num)})


def remove_zram(dev: Device) -> None:
    release_zram(dev.path.removeprefix("/dev/zram"))


def release_zram(num: str) -> None:
    """Reset and remove zram ``num``, waiting out the moment it stays busy after its last user went."""
    _retry(lambda: Path(f"/sys/block/zram{num}/reset").write_text("1"))
    _retry(lambda: (ZRAM_CONTROL / "hot_remove").write_text(num))


# --- a block device the user named ------------------------------------------


@contextmanager
def block_device(spec: DeviceSpec, ctx: BuildContext) -> Iterator[Device]:
    path = str(spec.path)
    reason = unsafe_reason(path)
    if reason:
        raise PrerequisiteError(f"refusing to use {path}: {reason}", hint="name a device nothing uses")
    name = os.path.basename(os.path.realpath(path))
    sectors = read_or_empty(str(SYS_BLOCK / name / "size")).strip()
    if not sectors.isdigit():
        raise PrerequisiteError(f"{path}: cannot read its size from {SYS_BLOCK / name / 'size'}")
    yield Device(path, "block", int(sectors) * 512, {"named_by_user": True, "sysfs_name": name})


def describe_block(dev_path: str) -> str:
    """What a user should see before agreeing to lose a device's data: its size and model."""
    name = os.path.basename(os.path.realpath(dev_path))
    sectors = read_or_empty(str(SYS_BLOCK / name / "size")).strip()
    size = f"{int(sectors) * 512 / 1e9:.1f} GB" if sectors.isdigit() else "size unknown"
    model = read_or_empty(str(SYS_BLOCK / name / "device" / "model")).strip()
    return f"{dev_path} ({size}{', ' + model if model else ''})"


def unsafe_reason(dev_path: str) -> str | None:
    """Why formatting ``dev_path`` on this host now could destroy something in use, or None."""
    try:
        mode = os.stat(dev_path).st_mode
    except FileNotFoundError:
        return "no such device"
    if not stat.S_ISBLK(mode):
        return "not a block device"
    real = os.path.realpath(dev_path)
    reason = why_unsafe(real, read_or_empty("/proc/mounts"), read_or_empty("/proc/swaps"), holders_of(real))
    return reason or _claimed(real)


def why_unsafe(dev_path: str, mounts_text: str, swaps_text: str, holders: list[str]) -> str | None:
    """Why ``dev_path`` (or one of its partitions) is in use, from /proc/mounts, /proc/swaps and
    its holders; None if nothing there says so. Pure but for resolving symlinks under /dev."""
    name = os.path.basename(os.path.realpath(dev_path))
    for line in mounts_text.splitlines():
        fields = line.split()
        if len(fields) >= 2 and _is_self_or_partition(fields[0], name):
            return f"{fields[0]} is mounted on {_unescape(fields[1])}"
    for line in swaps_text.splitlines()[1:]:  # the first line is the header
        fields = line.split()
        if fields and _is_self_or_partition(fields[0], name):
            return f"{fields[0]} is an active swap device"
    if holders:
        return f"held by {', '.join(sorted(holders))} (device-mapper, RAID, LVM or bcache)"
    return None


def _is_self_or_partition(source: str, disk: str) -> bool:
    if not source.startswith("/dev/"):
        return False  # tmpfs, proc, overlay, a network share: not a local device
    base = os.path.basename(os.path.realpath(source))
    if base == disk:
        return True
    # The kernel's naming rule: sda -> sda1, but nvme0n1 -> nvme0n1p1 and loop1 -> loop1p1.
    stem = disk + "p" if disk[-1].isdigit() else disk
    return base.startswith(stem) and base[len(stem) :].isdigit()


def _unescape(mount_field: str) -> str:
    return mount_field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def holders_of(dev_path: str) -> list[str]:
    """What holds the device or any of its partitions (device-mapper, md, bcache), from sysfs."""
    sysdir = SYS_BLOCK / os.path.basename(os.path.realpath(dev_path))
    if not sysdir.exists():
        return []
    parts = [p for p in sysdir.iterdir() if (p / "partition").exists()]
    return [h.name for d in (sysdir, *parts) for h in sorted((d / "holders").glob("*"))]


def _claimed(dev_path: str) -> str | None:
    """The kernel's own answer: an exclusive open fails while a filesystem, swap or
    device-mapper holds the device or any partition of it, whatever name it goes by."""
    try:
        fd = os.open(dev_path, os.O_RDONLY | os.O_EXCL)
    except OSError as exc:
        if exc.errno == errno.EBUSY:
            return "the kernel reports it busy (mounted, swap or held under another name)"
        return f"cannot open it exclusively: {exc.strerror}"
    os.close(fd)
    return None


def read_or_empty(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _retry(action: Callable[[], object], attempts: int = 10, delay: float = 0.3) -> None:
    """Devices stay busy for a moment after their last user goes (udev's probe, a lazy close)."""
    for i in range(attempts):
        try:
            action()
            return
        except (ToolError, OSError) as exc:
            if i == attempts - 1:
                raise TeardownError(f"could not release a device: {exc}") from exc
            time.sleep(delay)


@contextmanager
def no_device(spec: DeviceSpec, ctx: BuildContext) -> Iterator[Device]:
    """Nothing built here: the placement's storage is the cluster's (a claim of a StorageClass)."""
    yield Device("", "none", 0)


# Each local device kind's builder, keyed as its row in spec/devices/ (an explicit dict, no discovery).
BUILDERS: dict[str, Callable[[DeviceSpec, BuildContext], contextlib.AbstractContextManager[Device]]] = {
    "none": no_device,
    "loop": loop_device,
    "zram": zram_device,
    "block": block_device,
}
