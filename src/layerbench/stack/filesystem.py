"""The host filesystem layer: mkfs with the spec's options, mount, and undo."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from layerbench.errors import PrerequisiteError, TeardownError
from layerbench.spec.models import FilesystemSpec
from layerbench.stack.device import holders_of, read_or_empty, why_unsafe
from layerbench.stack.ledger import tracked
from layerbench.stack.target import BuildContext, Device, Mount

# Background initialisation of ext4 inode tables and journal would write to the
# device during the first trials and pollute them.
MKFS_BASE = {
    "ext4": ["mkfs.ext4", "-F", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0"],
    "xfs": ["mkfs.xfs", "-f", "-q"],
    "btrfs": ["mkfs.btrfs", "-f", "-q"],
    "reiserfs": ["mkfs.reiserfs", "-f", "-q"],
}


def mkfs_argv(fs: FilesystemSpec, dev_path: str) -> list[str]:
    argv = list(MKFS_BASE[fs.type])
    # overlay2 needs d_type; xfs has had ftype=1 as its default for years, but say so.
    if fs.type == "xfs" and not any("ftype" in o for o in fs.mkfs_options):
        argv += ["-n", "ftype=1"]
    return [*argv, *fs.mkfs_options, dev_path]


@contextmanager
def filesystem(dev: Device, spec: FilesystemSpec, ctx: BuildContext) -> Iterator[Mount]:
    if spec.type == "none":
        yield Mount(dev, "none", None)
        return
    reason = why_unsafe(dev.path, read_or_empty("/proc/mounts"), read_or_empty("/proc/swaps"), holders_of(dev.path))
    if reason:
        raise PrerequisiteError(f"refusing to format {dev.path}: {reason}")
    mkfs = mkfs_argv(spec, dev.path)
    ctx.runner(mkfs, timeout=600).check()
    mountpoint = ctx.work_dir / f"mnt-{spec.type}-{uuid.uuid4().hex[:8]}"

    def mount(rid: int) -> Path:
        mountpoint.mkdir(mode=0o700)
        options = ["-o", ",".join(spec.mount_options)] if spec.mount_options else []
        ctx.runner(["mount", "-t", spec.type, *options, dev.path, str(mountpoint)], timeout=120).check()
        return mountpoint

    with tracked(ctx.ledger, "mount", str(mountpoint), mount, lambda p: unmount(p, ctx), device=dev.path):
        info = {"mkfs": mkfs, "mount_options": list(spec.mount_options), "effective": _options(mountpoint)}
        yield Mount(dev, spec.type, mountpoint, info)


def unmount(mountpoint: Path, ctx: BuildContext) -> None:
    """Unmount, retrying while the kernel still holds it, then remove the empty directory."""
    if _is_mounted(mountpoint):
        for attempt in range(20):
            done = ctx.runner(["umount", str(mountpoint)], timeout=120)
            if done.rc == 0:
                break
            if attempt == 19:
                raise TeardownError(
                    f"cannot unmount {mountpoint}: {done.stderr.strip()}",
                    hint=f"see what holds it: fuser -vm {mountpoint}",
                )
            time.sleep(0.5)
    if mountpoint.exists():
        mountpoint.rmdir()


def _is_mounted(path: Path) -> bool:
    target = str(path)
    return any(line.split()[1] == target for line in read_or_empty("/proc/mounts").splitlines() if line.split())


def _options(mountpoint: Path) -> str:
    for line in read_or_empty("/proc/mounts").splitlines():
        parts = line.split()
        if len(parts) > 3 and parts[1] == str(mountpoint):
            return parts[3]
    return ""
