"""The bottom layer: a loop device, a zram device, or a block device the user named.

A loop file is written in full before it is attached (a hole or an unwritten
extent reads as zeros without touching the disk), and attached with direct
I/O so the host page cache does not answer for the disk.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from layerbench.errors import PrerequisiteError, TeardownError, ToolError
from layerbench.spec.models import DeviceSpec
from layerbench.stack.ledger import tracked
from layerbench.stack.target import BuildContext, Device

CHUNK = 8 * 2**20
ZRAM_CONTROL = Path("/sys/class/zram-control")


@contextmanager
def device(spec: DeviceSpec, ctx: BuildContext) -> Iterator[Device]:
    with BUILDERS[spec.kind](spec, ctx) as dev:
        yield dev


@contextmanager
def loop_device(spec: DeviceSpec, ctx: BuildContext) -> Iterator[Device]:
    backing = ctx.work_dir / f"loop-{uuid.uuid4().hex[:8]}.img"
    with tracked(ctx.ledger, "file", str(backing), lambda rid: _fill(backing, int(spec.size)), _unlink):
        dio = "on" if spec.direct_io else "off"

        def attach(rid: int) -> Device:
            argv = ["losetup", "--find", "--show", f"--direct-io={dio}", str(backing)]
            path = ctx.runner(argv, timeout=60).check().stdout.strip()
            ctx.ledger.update(rid, ident=path, backing=str(backing))
            return Device(path, "loop", int(spec.size), {"backing_file": str(backing), "direct_io": _dio(path)})

        def detach(dev: Device) -> None:
            _retry(lambda: ctx.runner(["losetup", "--detach", dev.path], timeout=60).check())

        with tracked(ctx.ledger, "loop", str(backing), attach, detach, backing=str(backing)) as dev:
            if spec.direct_io and not dev.info["direct_io"]:
                raise PrerequisiteError(
                    f"{dev.path}: the kernel refused direct I/O on {backing}",
                    hint="put --work-dir on a filesystem whose block size allows O_DIRECT (ext4, xfs)",
                )
            yield dev


def _fill(path: Path, size: int) -> Path:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        block = b"\0" * CHUNK
        for offset in range(0, size, CHUNK):
            os.write(fd, block[: min(CHUNK, size - offset)])
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


def _unlink(path: Path) -> None:
    path.unlink(missing_ok=True)


def _dio(dev_path: str) -> bool:
    flag = Path("/sys/block") / os.path.basename(dev_path) / "loop" / "dio"
    return flag.exists() and flag.read_text().strip() == "1"


@contextmanager
def zram_device(spec: DeviceSpec, ctx: BuildContext) -> Iterator[Device]:
    def create(rid: int) -> Device:
        if not (ZRAM_CONTROL / "hot_add").exists():
            raise PrerequisiteError("zram is not available", hint="modprobe zram")
        num = (ZRAM_CONTROL / "hot_add").read_text().strip()
        ctx.ledger.update(rid, ident=f"/dev/zram{num}", num=num)
        sysdir = Path(f"/sys/block/zram{num}")
        algos = (sysdir / "comp_algorithm").read_text().replace("[", "").replace("]", "").split()
        algo = "lz4" if "lz4" in algos else algos[0]
        (sysdir / "comp_algorithm").write_text(algo)
        (sysdir / "disksize").write_text(str(int(spec.size)))
        return Device(f"/dev/zram{num}", "zram", int(spec.size), {"comp_algorithm": algo})

    with tracked(ctx.ledger, "zram", "zram-pending", create, remove_zram) as dev:
        yield dev


def remove_zram(dev: Device) -> None:
    num = dev.path.removeprefix("/dev/zram")
    _retry(lambda: Path(f"/sys/block/zram{num}/reset").write_text("1"))
    (ZRAM_CONTROL / "hot_remove").write_text(num)


@contextmanager
def block_device(spec: DeviceSpec, ctx: BuildContext) -> Iterator[Device]:
    path = str(spec.path)
    reason = why_unsafe(path, read_or_empty("/proc/mounts"), read_or_empty("/proc/swaps"), holders_of(path))
    if reason:
        raise PrerequisiteError(f"refusing to use {path}: {reason}")
    size = int(read_or_empty(f"/sys/class/block/{os.path.basename(os.path.realpath(path))}/size") or 0) * 512
    yield Device(path, "block", size, {"named_by_user": True})


def why_unsafe(dev_path: str, mounts_text: str, swaps_text: str, holders: list[str]) -> str | None:
    """Why formatting ``dev_path`` could destroy something in use, or None."""
    try:
        mode = os.stat(dev_path).st_mode
    except FileNotFoundError:
        return "no such device"
    if not stat.S_ISBLK(mode):
        return "not a block device"
    real = os.path.realpath(dev_path)
    name = os.path.basename(real)

    def ours(candidate: str) -> bool:
        base = os.path.basename(os.path.realpath(candidate)) if candidate.startswith("/dev/") else ""
        return base == name or (base.startswith(name) and base[len(name) :].lstrip("p").isdigit())

    for line in mounts_text.splitlines():
        source, target = [*line.split(), "", ""][:2]
        if ours(source):
            return f"{source} is mounted on {target}"
    for line in swaps_text.splitlines()[1:]:
        if line.split() and ours(line.split()[0]):
            return f"{line.split()[0]} is an active swap device"
    if holders:
        return f"in use by {', '.join(holders)} (device-mapper, RAID or LVM)"
    return None


def holders_of(dev_path: str) -> list[str]:
    sysdir = Path("/sys/class/block") / os.path.basename(os.path.realpath(dev_path))
    found = [h.name for h in (sysdir / "holders").glob("*")] if sysdir.exists() else []
    for part in sysdir.glob(f"{sysdir.name}*"):
        found += [h.name for h in (part / "holders").glob("*")]
    return found


def read_or_empty(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _retry(action: Callable[[], object], attempts: int = 10, delay: float = 0.3) -> None:
    """Devices stay busy for a moment after their last user goes (udev, a lazy close)."""
    for i in range(attempts):
        try:
            action()
            return
        except (ToolError, OSError) as exc:
            if i == attempts - 1:
                raise TeardownError(f"could not release a device: {exc}") from exc
            time.sleep(delay)


BUILDERS: dict[str, Callable[[DeviceSpec, BuildContext], contextlib.AbstractContextManager[Device]]] = {
    "loop": loop_device,
    "zram": zram_device,
    "block": block_device,
}
