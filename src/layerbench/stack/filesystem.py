"""The host filesystem layer: mkfs with the spec's options, mount, and undo.

mkfs never runs on a device that something uses: the same safety check as for
a device the user names runs again right before it.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from layerbench.errors import PrerequisiteError, SpecError, TeardownError
from layerbench.spec.models import FilesystemSpec
from layerbench.stack.device import read_or_empty, unsafe_reason
from layerbench.stack.ledger import tracked
from layerbench.stack.target import BuildContext, Device, Mount

MKFS_BASE = {
    "ext4": ["mkfs.ext4", "-F", "-q"],
    "xfs": ["mkfs.xfs", "-f", "-q"],
    "btrfs": ["mkfs.btrfs", "-f", "-q"],
    "reiserfs": ["mkfs.reiserfs", "-f", "-q"],
}
# Background initialisation of ext4 inode tables and journal would write to the
# device during the first trials and pollute them.
EXT4_EXTENDED = ("lazy_itable_init=0", "lazy_journal_init=0")
# mkfs discards the whole device by default; on a loop device that punches holes
# into the backing file we wrote in full (measured here: 320 MiB allocated before
# mkfs.ext4, 28 MiB after), and reads of holes never reach the disk.
NODISCARD = {"ext4": [], "xfs": ["-K"], "btrfs": ["-K"], "reiserfs": []}
UMOUNT_ATTEMPTS = 20
UMOUNT_DELAY_S = 0.25


@contextmanager
def filesystem(dev: Device, spec: FilesystemSpec, ctx: BuildContext) -> Iterator[Mount]:
    """``dev`` formatted and mounted as ``spec`` says; type "none" passes the device through."""
    if spec.type == "none":
        yield Mount(dev, "none", None)
        return
    reason = unsafe_reason(dev.path)
    if reason:
        raise PrerequisiteError(f"refusing to format {dev.path}: {reason}", hint="name a device nothing uses")
    keep_allocated = dev.kind == "loop"
    mkfs = mkfs_argv(spec, dev.path, nodiscard=keep_allocated)
    ctx.runner(mkfs, timeout=600).check()
    mountpoint = ctx.work_dir / f"mnt-{spec.type}-{uuid.uuid4().hex[:8]}"

    def mount(rid: int) -> Path:
        return _mount(dev, spec, mountpoint, rid, ctx)

    with tracked(ctx.ledger, "mount", str(mountpoint), mount, lambda p: unmount(p, ctx), device=dev.path):
        info = {
            "mkfs": mkfs,
            "mkfs_options": mkfs[1:-1],
            "discard_at_mkfs": not keep_allocated,
            "mount_options": list(spec.mount_options),
            "effective": _effective_options(mountpoint, ctx),
        }
        yield Mount(dev, spec.type, mountpoint, info)


def mkfs_argv(fs: FilesystemSpec, dev_path: str, nodiscard: bool = False) -> list[str]:
    """The mkfs command for ``fs`` on ``dev_path``, the spec's own options last so they win."""
    argv = [*MKFS_BASE[fs.type], *(NODISCARD[fs.type] if nodiscard else [])]
    options = list(fs.mkfs_options)
    if fs.type == "ext4":
        # mke2fs keeps only the last -E it is given: merge the spec's into ours.
        extended, options = _split_extended(options)
        ours = [*EXT4_EXTENDED, *(["nodiscard"] if nodiscard else [])]
        argv += ["-E", ",".join([*ours, *extended])]
    # overlay2 needs d_type; xfs has had ftype=1 as its default for years, but say so.
    if fs.type == "xfs" and not any("ftype" in o for o in options):
        argv += ["-n", "ftype=1"]
    return [*argv, *options, dev_path]


def _split_extended(options: list[str]) -> tuple[list[str], list[str]]:
    """(the values of every -E, the other options) from an mke2fs option list."""
    extended: list[str] = []
    rest: list[str] = []
    it = iter(options)
    for opt in it:
        if opt == "-E":
            value = next(it, None)
            if value is None:
                raise SpecError("filesystem.mkfs_options ends with -E and no value")
            extended.append(value)
        elif opt.startswith("-E"):
            extended.append(opt[2:])
        else:
            rest.append(opt)
    return extended, rest


def _mount(dev: Device, spec: FilesystemSpec, mountpoint: Path, rid: int, ctx: BuildContext) -> Path:
    mountpoint.mkdir(mode=0o700)
    options = ["-o", ",".join(spec.mount_options)] if spec.mount_options else []
    done = ctx.runner(["mount", "-t", spec.type, *options, dev.path, str(mountpoint)], timeout=120)
    if done.rc != 0 and not _is_mounted(mountpoint):
        mountpoint.rmdir()
        ctx.ledger.removed(rid)  # nothing was mounted and the directory is gone
    done.check()
    return mountpoint


def _effective_options(mountpoint: Path, ctx: BuildContext) -> str:
    """The options the kernel applied, which may differ from those asked for."""
    argv = ["findmnt", "--noheadings", "--output", "OPTIONS", "--mountpoint", str(mountpoint)]
    return ctx.runner(argv, timeout=30).check().stdout.strip()


def unmount(mountpoint: Path, ctx: BuildContext) -> None:
    """Unmount, retrying while the kernel still holds it, then remove the empty directory."""
    for _ in range(UMOUNT_ATTEMPTS):
        if not _is_mounted(mountpoint):
            break
        done = ctx.runner(["umount", str(mountpoint)], timeout=120)
        if done.rc != 0:
            time.sleep(UMOUNT_DELAY_S)  # busy: a process or udev's probe is about to let go
    else:
        if _is_mounted(mountpoint):
            holders = what_holds(mountpoint)
            raise TeardownError(
                f"cannot unmount {mountpoint}: held by {', '.join(holders) or 'nothing visible in /proc'}",
                hint=f"end those processes, then `umount {mountpoint}` or `layerbench cleanup`",
            )
    if mountpoint.exists():
        mountpoint.rmdir()


def _is_mounted(path: Path) -> bool:
    target = str(path)
    return any(f[1] == target for f in _mount_fields())


def _mount_fields() -> list[list[str]]:
    return [line.split() for line in read_or_empty("/proc/mounts").splitlines() if len(line.split()) >= 2]


def what_holds(mountpoint: Path) -> list[str]:
    """Mounts below ``mountpoint`` and processes with a file, directory or root in it."""
    prefix = str(mountpoint) + "/"
    found = [f"mount {f[1]}" for f in _mount_fields() if f[1].startswith(prefix)]
    for proc in Path("/proc").glob("[0-9]*"):
        if _uses(proc, str(mountpoint)):
            comm = read_or_empty(str(proc / "comm")).strip() or "?"
            found.append(f"pid {proc.name} ({comm})")
    return found


def _uses(proc: Path, mountpoint: str) -> bool:
    links = [proc / "cwd", proc / "root", proc / "exe"]
    try:
        links += list((proc / "fd").iterdir())
    except OSError:  # the process ended, or is not ours to look into
        return False
    for link in links:
        try:
            target = os.readlink(link)
        except OSError:
            continue
        if target == mountpoint or target.startswith(mountpoint + "/"):
            return True
    return False
