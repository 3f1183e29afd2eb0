"""iSCSI: the kernel's target (LIO), configured through configfs, serves the backing device from the
storage host; open-iscsi (iscsiadm, with its iscsid) logs in here and the LUN becomes a SCSI disk.

The target's IQN carries the storage host's name, so cleanup knows which target, node records and
session are a dead run's. A lost link fails I/O after seconds (replacement_timeout), not two minutes.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from layerbench.proc import Runner
from layerbench.spec.models import RemoteSpec
from layerbench.stack.ledger import Resource, tracked
from layerbench.stack.remote import kernel
from layerbench.stack.remote.host import StorageHost
from layerbench.stack.remote.needs import Need
from layerbench.stack.target import BuildContext, Device

TARGET = Path("/sys/kernel/config/target")
SYS = Path("/sys")  # the unit tests pass a tree rebuilt from a real session's (tests/data/remote/sysfs)
PORT = 3260
MODULES = ("target_core_mod", "target_core_iblock", "iscsi_target_mod", "iscsi_tcp")
# What its kernel client needs of this host (a feature of HostCaps.remote, named by spec/transports/iscsi.py).
NEEDS = {"iscsi": Need({"iscsiadm": "open-iscsi"}, MODULES, configfs=True)}
IQN_PREFIX = "iqn.2026-11.io.layerbench:"
REPLACEMENT_TIMEOUT_S = 5
# The TPG's attributes for a lab target: any initiator, no CHAP, writable.
OPEN_TPG = {"authentication": "0", "generate_node_acls": "1", "cache_dynamic_acls": "1", "demo_mode_write_protect": "0"}
APPEAR_LIMIT_S = 60.0


def iqn_for(host: StorageHost) -> str:
    return IQN_PREFIX + host.netns


def portal(host: StorageHost) -> str:
    return f"{host.remote_address}:{PORT}"


@contextmanager
def attached(backing: Device, host: StorageHost, remote: RemoteSpec, ctx: BuildContext) -> Iterator[Device]:
    kernel.load(MODULES, ctx.runner)
    iqn = iqn_for(host)
    with exported(backing, host, iqn, ctx), logged_in(host, iqn, ctx) as dev:
        yield dev


# --- the target --------------------------------------------------------------


@contextmanager
def exported(backing: Device, host: StorageHost, iqn: str, ctx: BuildContext) -> Iterator[None]:
    hba = f"iblock_{random.randint(1000, 60000)}"  # its own HBA: nothing else's backstores share it

    def create(rid: int) -> None:
        try:
            _configure(backing, host, iqn, hba, ctx)
        except BaseException:
            remove_target(iqn, hba, host.netns)
            ctx.ledger.removed(rid)
            raise

    remove = lambda _: remove_target(iqn, hba, host.netns)  # noqa: E731
    with tracked(ctx.ledger, "iscsi-target", iqn, create, remove, hba=hba, netns=host.netns):
        yield


def _configure(backing: Device, host: StorageHost, iqn: str, hba: str, ctx: BuildContext) -> None:
    store = TARGET / "core" / hba / host.netns
    store.mkdir(parents=True)
    (store / "control").write_text(f"udev_path={backing.path}")
    (store / "udev_path").write_text(backing.path)  # only shown (targetcli writes it too); control opens it
    (store / "enable").write_text("1")
    tpg = TARGET / "iscsi" / iqn / "tpgt_1"
    lun = tpg / "lun" / "lun_0"
    lun.mkdir(parents=True)
    (lun / host.netns).symlink_to(store)
    for name, value in OPEN_TPG.items():
        (tpg / "attrib" / name).write_text(value)
    # The portal's socket opens in the namespace of the process that makes it (see StorageHost.configfs_argv).
    ctx.runner(host.configfs_argv(["mkdir", str(tpg / "np" / portal(host))]), timeout=60).check()
    (tpg / "enable").write_text("1")


def remove_target(iqn: str, hba: str, netns: str) -> None:
    """Disable, then remove the portal, the LUN, the TPG, the target and the backstore, each if there."""
    if not iqn.startswith(IQN_PREFIX):
        return
    target = TARGET / "iscsi" / iqn
    tpg = target / "tpgt_1"
    if (tpg / "enable").exists():
        (tpg / "enable").write_text("0")
    for np in kernel.children(tpg / "np"):
        np.rmdir()
    lun = tpg / "lun" / "lun_0"
    for link in kernel.children(lun):
        if link.is_symlink():
            link.unlink()
    for d in (lun, tpg, target, TARGET / "core" / hba / netns, TARGET / "core" / hba):
        if d.is_dir():
            d.rmdir()


# --- the initiator -----------------------------------------------------------


@contextmanager
def logged_in(host: StorageHost, iqn: str, ctx: BuildContext) -> Iterator[Device]:
    where = portal(host)

    def create(rid: int) -> Device:
        try:
            return _login(iqn, where, ctx.runner)
        except BaseException:
            logout(iqn, where, ctx.runner)
            ctx.ledger.removed(rid)
            raise

    with tracked(
        ctx.ledger, "iscsi-session", iqn, create, lambda d: logout(iqn, where, ctx.runner), portal=where
    ) as dev:
        yield dev


def node_argv(iqn: str, where: str, *args: str) -> list[str]:
    return ["iscsiadm", "--mode", "node", "--targetname", iqn, "--portal", where, *args]


def _login(iqn: str, where: str, runner: Runner) -> Device:
    runner(["iscsiadm", "--mode", "discovery", "--type", "sendtargets", "--portal", where], timeout=120).check()
    timeout = ["--op", "update", "--name", "node.session.timeo.replacement_timeout", "--value"]
    runner(node_argv(iqn, where, *timeout, str(REPLACEMENT_TIMEOUT_S)), timeout=60).check()
    runner(node_argv(iqn, where, "--login"), timeout=120).check()
    path, size = kernel.appeared(lambda: disks(iqn), APPEAR_LIMIT_S, f"logged in to {iqn} at {where}")
    return Device(path, "iscsi", size, {"client": "open-iscsi (kernel)", "iqn": iqn})


def logout(iqn: str, where: str, runner: Runner) -> None:
    """Log out of our target's session, if any, and forget its node and discovery records."""
    if not iqn.startswith(IQN_PREFIX):
        return
    if disks(iqn):
        runner(node_argv(iqn, where, "--logout"), timeout=120).check()
    runner(node_argv(iqn, where, "--op", "delete"), timeout=60)  # absent records: nothing to delete
    runner(
        ["iscsiadm", "--mode", "discoverydb", "--type", "sendtargets", "--portal", where, "--op", "delete"], timeout=60
    )


def disks(iqn: str, sys: Path = SYS) -> list[str]:
    """The SCSI disks of our sessions, from sysfs (no udev needed)."""
    sessions = [s for s in kernel.children(sys / "class/iscsi_session") if kernel.read(s / "targetname") == iqn]
    return sorted(b.name for s in sessions for b in (s / "device").glob("target*/*/block/*"))


def _remove_target(res: Resource, runner: Runner) -> None:
    remove_target(res.ident, res.detail.get("hba", ""), res.detail.get("netns", ""))


def _logout(res: Resource, runner: Runner) -> None:
    logout(res.ident, res.detail.get("portal", ""), runner)


# What cleanup removes of a dead run's, by ledger kind.
REMOVERS = {"iscsi-target": _remove_target, "iscsi-session": _logout}
