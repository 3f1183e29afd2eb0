"""Docker's devicemapper storage driver in its two modes, and what each leaves to remove.

loop-lvm (Docker's default): dockerd makes sparse ``data`` and ``metadata`` files in its data-root,
attaches them to loop devices itself, without direct I/O, and builds its thin pool on them, so the
host's page cache sits under every container's I/O (the anomaly seed 000 saw). direct-lvm: dockerd is
given an LVM thin pool (``dm.thinpooldev``) that layerbench builds here on a block device of its own,
a loop device with direct I/O over a file written in full on the stack's filesystem: as Docker
recommends for production, with deferred removal and deletion.

A dockerd killed by SIGKILL leaves its device-mapper devices active (its thin devices, and in loop-lvm
its pool and the loop devices under it); they are found from the loop devices whose backing file lies
below the daemon's data-root, or, for direct-lvm, as what holds the pool, and removed top-down.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from layerbench.errors import PrerequisiteError, TeardownError, ToolError
from layerbench.proc import Runner
from layerbench.stack.device import MIB, attached_loop, written_file
from layerbench.stack.ledger import tracked
from layerbench.stack.target import BuildContext, Mount

SYS_BLOCK = Path("/sys/block")
RUN_LVM = Path("/run/lvm")
# The pool takes this share of the free space of the stack's filesystem; dockerd's data-root shares the rest.
POOL_SHARE = 0.5
POOL_MIN = 256 * MIB  # the tools image (about 90 MB) and a test file must fit, with Docker's 10% kept free
POOL_LV = "pool"
# No metadata backups or archives under /etc/lvm: a pool that lives for one stack leaves nothing there.
LVM_CONFIG = "backup { backup = 0 archive = 0 }"
LVM_TIMEOUT_S = 300.0  # each LVM command scans and waits for udev: seconds, a minute under emulation


def storage_opts(mode: str | None, pool: str | None = None) -> list[str]:
    """dockerd's --storage-opt values for a mode: none for loop-lvm (Docker's defaults), the thin pool
    and deferred removal and deletion for direct-lvm (Docker's production recipe)."""
    if mode != "direct-lvm":
        return []
    assert pool is not None
    return [f"dm.thinpooldev={pool}", "dm.use_deferred_removal=true", "dm.use_deferred_deletion=true"]


def pool_size(free_bytes: int) -> int:
    """The pool's file: a share of the free space, in whole 4 MiB extents (LVM's default)."""
    extent = 4 * MIB
    return int(free_bytes * POOL_SHARE) // extent * extent


def lvm(argv: list[str], device: str) -> list[str]:
    """An LVM command that sees only ``device`` (no scan of the host's disks, no devices file)."""
    return [argv[0], "--config", LVM_CONFIG, "--devices", device, *argv[1:]]


@contextmanager
def thin_pool(mount: Mount, ctx: BuildContext) -> Iterator[str]:
    """An LVM thin pool for direct-lvm, on a loop device (direct I/O) over a file on ``mount``; yields
    its device (/dev/mapper/<vg>-pool). Each piece is in the ledger before it exists."""
    if mount.mountpoint is None:
        raise PrerequisiteError("direct-lvm's thin pool needs a filesystem for its file", hint="set a filesystem")
    st = os.statvfs(mount.mountpoint)
    free = st.f_bavail * st.f_frsize
    size = pool_size(free)
    if size < POOL_MIN:
        raise PrerequisiteError(
            f"{mount.mountpoint} has {free // MIB} MiB free: direct-lvm's thin pool takes half, and needs "
            f"{POOL_MIN // MIB} MiB",
            hint="use a larger device",
        )
    tag = uuid.uuid4().hex[:8]
    backing = mount.mountpoint / f"lb-thinpool-{tag}.img"
    vg = f"lb{tag}"  # no '-': device-mapper names are <vg>-<lv>, with a '-' inside either doubled
    with (
        written_file(backing, size, ctx),  # in full: a hole would read as zeros without touching the device
        attached_loop(backing, size, True, ctx) as dev,
        tracked(
            ctx.ledger,
            "thinpool",
            vg,
            lambda rid: _create_pool(vg, dev.path, str(backing), rid, ctx),
            lambda pool: remove_pool(vg, dev.path, str(backing), ctx.runner),
            backing=str(backing),
            loop=dev.path,
        ) as pool,
    ):
        yield pool


def _create_pool(vg: str, device: str, backing: str, rid: int, ctx: BuildContext) -> str:
    steps = [
        ["pvcreate", "--yes", device],
        ["vgcreate", "--setautoactivation", "n", vg, device],
        # Docker's recipe for direct-lvm: 512 KiB chunks, no zeroing of new blocks.
        [
            *("lvcreate", "--type", "thin-pool", "--extents", "90%FREE", "--chunksize", "512k", "--zero", "n"),
            *("--poolmetadataspare", "n", "--yes", "--name", POOL_LV, vg),
        ],
    ]
    try:
        for argv in steps:
            ctx.runner(lvm(argv, device), timeout=LVM_TIMEOUT_S).check()
    except BaseException:
        with contextlib.suppress(TeardownError, ToolError):
            remove_pool(vg, device, backing, ctx.runner)
            ctx.ledger.removed(rid)  # known gone: nothing for cleanup to chase
        raise
    return f"/dev/mapper/{vg}-{POOL_LV}"


def remove_pool(vg: str, device: str, backing: str, runner: Runner, sys_block: Path = SYS_BLOCK) -> None:
    """The volume group and everything above it: what dockerd left active on the pool (its thin devices),
    then the pool, then the physical volume's label. Nothing to do when the loop device is no longer the
    one over ``backing`` (detached, or another's now)."""
    name = os.path.basename(device)
    try:
        attached = (sys_block / name / "loop" / "backing_file").read_text().strip()
    except OSError:
        return
    if attached.removesuffix(" (deleted)") != backing:
        return
    left = remove_holders(name, runner, keep=lambda dm: dm.startswith(f"{vg}-"), sys_block=sys_block)
    if left:
        raise TeardownError(f"thin pool {vg}: {', '.join(left)} still in use", hint="run `layerbench cleanup`")
    listed = runner(lvm(["vgs", "--noheadings", "-o", "vg_name"], device), timeout=LVM_TIMEOUT_S)
    if vg in listed.stdout.split():
        remove = lvm(["vgremove", "--force", "--yes", vg], device)
        if runner(remove, timeout=LVM_TIMEOUT_S).rc != 0:
            # LVM may refuse to deactivate a pool whose transaction id dockerd moved on: take its devices
            # down with dmsetup, then remove the volume group, inactive now, from its metadata alone.
            left = remove_holders(name, runner, sys_block=sys_block)
            if left:
                raise TeardownError(f"thin pool {vg}: {', '.join(left)} still in use", hint="run `layerbench cleanup`")
            runner(remove, timeout=LVM_TIMEOUT_S).check()
    pvs = runner(lvm(["pvs", "--noheadings", "-o", "pv_name"], device), timeout=LVM_TIMEOUT_S).stdout
    if device in pvs.split():
        runner(lvm(["pvremove", "--yes", device], device), timeout=LVM_TIMEOUT_S).check()
    # udev's pvscan saw the new physical volume and marked it and the group online; nothing unmarks them.
    with contextlib.suppress(ToolError):  # no udevadm: no udev, and no pvscan either
        runner(["udevadm", "settle", "--timeout=60"], timeout=90)
    forget_online(vg)


def forget_online(vg: str, run_lvm: Path = RUN_LVM) -> None:
    """Remove LVM's autoactivation records of ``vg`` (/run/lvm/vgs_online/<vg>, and pvs_online/<pvid>
    files naming it): written by udev's pvscan for the pool's volume, never removed with it."""
    (run_lvm / "vgs_online" / vg).unlink(missing_ok=True)
    for record in run_lvm.glob("pvs_online/*"):
        with contextlib.suppress(OSError):
            if f"vg:{vg}" in record.read_text().split():
                record.unlink()


def holders(name: str, sys_block: Path = SYS_BLOCK) -> list[str]:
    """The block devices (dm-N) holding ``name``, directly or through each other, top-most first:
    the order in which they can be removed."""
    order: list[str] = []

    def visit(dev: str) -> None:
        for holder in sorted(p.name for p in (sys_block / dev / "holders").glob("*")):
            visit(holder)
            if holder not in order:
                order.append(holder)

    visit(name)
    return order


def dm_name(dev: str, sys_block: Path = SYS_BLOCK) -> str:
    """dm-3's device-mapper name (docker-254:0-1234-pool), as dmsetup takes it."""
    try:
        return (sys_block / dev / "dm" / "name").read_text().strip()
    except OSError:
        return dev


def remove_holders(
    name: str, runner: Runner, keep: Callable[[str], bool] | None = None, sys_block: Path = SYS_BLOCK
) -> list[str]:
    """Remove every device-mapper device above block device ``name`` (but those whose name ``keep``
    accepts), top-most first; returns those still there."""
    ours = keep or (lambda dm: False)
    for dev in holders(name, sys_block):
        dm = dm_name(dev, sys_block)
        if not ours(dm) and (sys_block / dev).exists():
            runner(["dmsetup", "remove", "--retry", dm], timeout=120)
    left = [dm_name(d, sys_block) for d in holders(name, sys_block)]
    return [f"device-mapper device {dm}" for dm in left if not ours(dm)]


def loops_below(root: Path, sys_block: Path = SYS_BLOCK) -> list[str]:
    """Loop devices whose backing file lies below ``root`` (loop-lvm's, in a daemon's data-root)."""
    prefix = str(root).rstrip("/") + "/"
    found = []
    for backing in sys_block.glob("loop*/loop/backing_file"):
        with contextlib.suppress(OSError):
            if backing.read_text().strip().removesuffix(" (deleted)").startswith(prefix):
                found.append(backing.parent.parent.name)
    return sorted(found)


def release_below(root: Path, runner: Runner, sys_block: Path = SYS_BLOCK) -> list[str]:
    """loop-lvm's devices under ``root``: the device-mapper devices over its loop devices, then the loop
    devices themselves (already gone when autoclear detached them with the pool); returns what is left."""
    for loop in loops_below(root, sys_block):
        remove_holders(loop, runner, sys_block=sys_block)
        if (sys_block / loop / "loop").exists():
            runner(["losetup", "--detach", f"/dev/{loop}"], timeout=60)
    left = []
    for loop in loops_below(root, sys_block):
        left += [f"device-mapper device {dm_name(d, sys_block)}" for d in holders(loop, sys_block)]
        left.append(f"loop device /dev/{loop}")
    return left
