"""The VM engine: the workload runs in a qemu guest (seed 002's VM-L), its disk the stack's storage.

The guest is the test VM's image (tools/vm/build-image.sh: Debian's kernel, systemd, fio), booted once
per engine layer with one data disk, its /dev/vdb, opened by qemu with ``cache=none`` so that every
guest I/O reaches the stack's device:

- on a stack without a filesystem (placement ``raw``), the disk *is* the stack's block device;
- on a stack with one (placement ``host-dir``), the disk is an image file on that filesystem,
  preallocated (``fallocate``), and the guest makes a filesystem of the same type on it and works
  in a directory there: a VM's local disk as a VM host keeps it.

Commands reach the guest through ``vm/guest.py``'s channel. KVM where a probe guest ran (spec/rules.py
refuses VM cells without it unless the spec allows emulation); an emulated guest's trials carry a
``not-comparable`` flag, since a TCG CPU is 10-50x slower than the host's.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from layerbench.errors import PrerequisiteError
from layerbench.spec.engines.vm import VM_MAX_SERVERS, GuestCaps
from layerbench.spec.models import EngineSpec, StackSpec
from layerbench.stack.engines.vm import guest_servers, qemu
from layerbench.stack.engines.vm.guest import GONE, GONE_RC, GUEST_MOUNT, Guest, booted
from layerbench.stack.fleet import Starter
from layerbench.stack.ledger import tracked
from layerbench.stack.ports import free_ports
from layerbench.stack.protocols import HostProbe
from layerbench.stack.target import BuildContext, Mount, Target
from layerbench.workloads.servers import ServerDef

DISK = "/dev/vdb"  # the guest's first data disk (its root is /dev/vda)
# The disk file takes this share of the free space, leaving the host filesystem room for its metadata.
DISK_SHARE = 0.85
SETUP_TIMEOUT_S = 900.0  # mkfs and mount under emulation, on a busy host
GUEST_PORT_BASE = 20000
MKFS_QUIET = {"ext4": ["-F", "-q", "-E", "nodiscard"], "xfs": ["-f", "-q", "-K"], "btrfs": ["-f", "-q", "-K"]}


@dataclass
class VmEngine:
    guest: Guest
    mount: Mount
    ports: list[tuple[int, int]]  # (host, guest): one forwarded port per database server
    kind: str = "vm"
    facts: dict[str, Any] = field(default_factory=dict)  # recorded with every trial: accel, kernel, fio's hash

    def place(
        self, mount: Mount, stack: StackSpec, data_bytes: int, ctx: BuildContext
    ) -> AbstractContextManager[Target]:
        return _placed(self, stack)

    def server_starter(self, definition: ServerDef, exits: contextlib.ExitStack, ctx: BuildContext) -> Starter:
        """How a database fleet starts its servers in this guest (guest_servers.py)."""
        return guest_servers.starter(self.guest, self.ports, definition, exits, ctx)


def forwards() -> list[tuple[int, int]]:
    """(host port, guest port) for each server a guest may run: qemu binds the host's side at its start."""
    return [(host, GUEST_PORT_BASE + i) for i, host in enumerate(free_ports(VM_MAX_SERVERS))]


@contextmanager
def start(mount: Mount, spec: EngineSpec, ctx: BuildContext) -> Iterator[VmEngine]:
    ports = forwards()
    with guest_on(mount, ctx, ports) as (guest, facts):
        yield VmEngine(guest, mount, ports, facts=facts)


@contextmanager
def guest_on(
    mount: Mount, ctx: BuildContext, forwards: list[tuple[int, int]] | None = None
) -> Iterator[tuple[Guest, dict[str, Any]]]:
    """A guest whose /dev/vdb is the stack's device, or a disk file on its filesystem with a filesystem of
    the same type made and mounted in the guest at GUEST_MOUNT; with the facts every trial records."""
    image = qemu.require(ctx.cache_dir)
    accel = qemu.accel_for(image, ctx.work_dir)
    shares = [qemu.Share("lbcache", ctx.cache_dir)] if ctx.cache_dir.is_dir() else []  # IOzone, at its host path
    with contextlib.ExitStack() as stack:
        disk = mount.device.path if mount.mountpoint is None else stack.enter_context(_disk_file(mount, ctx))
        guest = stack.enter_context(booted(image, ctx, accel, [disk], shares, forwards=forwards or ()))
        facts = _facts(guest, disk)
        if mount.mountpoint is not None:
            stack.enter_context(_guest_filesystem(guest, mount.fs_type))
        yield guest, facts


def failure(rc: int | None, stderr: str) -> str | None:
    """The guest died under the command: the stack must be rebuilt, the tool is not to blame."""
    return "engine-error" if rc == GONE_RC and GONE in stderr else None


@contextmanager
def _disk_file(mount: Mount, ctx: BuildContext) -> Iterator[str]:
    assert mount.mountpoint is not None  # only stacks with a filesystem get a disk file
    path = mount.mountpoint / "lb-vm-disk.img"
    fs = os.statvfs(mount.mountpoint)
    size = int(fs.f_bavail * fs.f_frsize * DISK_SHARE)
    size -= size % 2**20

    def create(rid: int) -> Path:
        ctx.runner(["fallocate", "-l", str(size), str(path)], timeout=600).check()
        return path

    with tracked(ctx.ledger, "file", str(path), create, lambda p: p.unlink(missing_ok=True), size=size):
        yield str(path)


@contextmanager
def _guest_filesystem(guest: Guest, fs_type: str) -> Iterator[None]:
    if fs_type not in MKFS_QUIET:
        raise PrerequisiteError(f"the guest cannot make {fs_type} on its disk (it has mkfs for ext4, xfs, btrfs)")
    guest.run([f"mkfs.{fs_type}", *MKFS_QUIET[fs_type], DISK], SETUP_TIMEOUT_S).check()
    guest.run(["mkdir", "-p", GUEST_MOUNT], SETUP_TIMEOUT_S).check()
    guest.run(["mount", DISK, GUEST_MOUNT], SETUP_TIMEOUT_S).check()
    try:
        yield
    finally:
        if guest.alive():  # a guest that died took its mount with it
            guest.run(["umount", GUEST_MOUNT], SETUP_TIMEOUT_S).check()


def _facts(guest: Guest, disk: str) -> dict[str, Any]:
    digest = guest.run(["sha256sum", "/usr/bin/fio"], SETUP_TIMEOUT_S).check().stdout.split()[0]
    return {
        "accel": guest.accel,
        "guest_kernel": guest.facts.get("kernel"),
        "guest_cpus": guest.facts.get("cpus"),
        "boot_attempts": guest.facts.get("boot_attempts"),  # 2: the first boot's kernel hung (guest.py)
        "disk": disk,
        "fio_sha256": digest,
    }


@contextmanager
def _placed(engine: VmEngine, stack: StackSpec) -> Iterator[Target]:
    guest, kind = engine.guest, stack.placement.kind
    info = {"placement": kind, **engine.facts}
    device = engine.mount.device  # the host's device under the guest's disk: the monitor accounts it
    if kind == "raw":
        yield Target(guest.run, guest.put, DISK, True, device, "vm", info, mount_table=_mount_table(guest))
        return
    if kind != "host-dir":
        raise PrerequisiteError(f"placement {kind!r} is not a VM placement (raw or host-dir)")
    path = f"{GUEST_MOUNT}/lb-data"
    guest.run(["mkdir", path], SETUP_TIMEOUT_S).check()
    try:
        yield Target(guest.run, guest.put, path, False, device, "vm", info, mount_table=_mount_table(guest))
    finally:
        if guest.alive():
            guest.run(["rm", "-rf", path], SETUP_TIMEOUT_S).check()


def _mount_table(guest: Guest) -> Callable[[], str]:
    """The guest's mounts, as the workload there sees them (for the volatile-mount check)."""
    return lambda: guest.run(["cat", "/proc/self/mountinfo"], SETUP_TIMEOUT_S).check().stdout


def probe(ask: HostProbe) -> GuestCaps:
    """Whether a guest can boot here (qemu, the image), and under which accelerator (a probe boot)."""
    reason = qemu.missing(ask.cache_dir)
    if reason is not None:
        return GuestCaps(accel=None, missing=reason)
    with tempfile.TemporaryDirectory(prefix="layerbench-kvm-") as tmp:
        return GuestCaps(accel=qemu.accel_for(qemu.require(ask.cache_dir), Path(tmp)), missing=None)
