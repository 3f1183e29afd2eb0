"""NVMe over TCP: the kernel's target (nvmet), configured through configfs, listens on the storage
host; the kernel's initiator (`nvme connect`) makes its namespace a block device here.

The subsystem's NQN carries the storage host's name, so cleanup knows which subsystem, port and
connection are a dead run's. A lost link must not hang a run for the kernel's default ten minutes:
the connection gives up after seconds (ctrl_loss_tmo, fast_io_fail_tmo) and fails the I/O instead.
"""

from __future__ import annotations

import contextlib
import random
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from layerbench.errors import PrerequisiteError
from layerbench.proc import Runner
from layerbench.spec.models import RemoteSpec
from layerbench.stack.ledger import Resource, tracked
from layerbench.stack.remote import kernel
from layerbench.stack.remote.host import StorageHost
from layerbench.stack.remote.needs import Need
from layerbench.stack.target import BuildContext, Device

NVMET = Path("/sys/kernel/config/nvmet")
SYS = Path("/sys")  # the unit tests pass a tree rebuilt from a real connection's (tests/data/remote/sysfs)
PORT = 4420  # NVMe/TCP's registered port
MODULES = ("nvmet", "nvmet-tcp", "nvme-tcp")
# What its kernel client needs of this host (a feature of HostCaps.remote, named by spec/transports/nvme_tcp.py):
# /sys/module names a module with underscores.
NEEDS = {"nvme-tcp": Need({"nvme": "nvme-cli"}, tuple(m.replace("-", "_") for m in MODULES), configfs=True)}
NQN_PREFIX = "nqn.2026-11.io.layerbench:"
# Seconds before a lost controller is given up (the kernel's default is 600) and its I/O fails.
CTRL_LOSS_TMO, RECONNECT_DELAY, FAST_IO_FAIL_TMO = 5, 1, 2
BLOCK_NAME = re.compile(r"nvme\d+n\d+")  # nvme0n1; not the hidden per-path nvme0c0n1
APPEAR_LIMIT_S = 30.0


def nqn_for(host: StorageHost) -> str:
    return NQN_PREFIX + host.netns


@contextmanager
def attached(backing: Device, host: StorageHost, remote: RemoteSpec, ctx: BuildContext) -> Iterator[Device]:
    kernel.load(MODULES, ctx.runner)
    nqn = nqn_for(host)
    with exported(backing, host, nqn, ctx), connected(host, nqn, ctx) as dev:
        yield dev


@contextmanager
def exported(backing: Device, host: StorageHost, nqn: str, ctx: BuildContext) -> Iterator[str]:
    def create(rid: int) -> str:
        port = _free_port_id()
        ctx.ledger.update(rid, port=port)
        try:
            _configure(backing, host, nqn, port, ctx)
        except BaseException:
            remove_target(nqn, port)
            ctx.ledger.removed(rid)
            raise
        return port

    with tracked(ctx.ledger, "nvmet", nqn, create, lambda port: remove_target(nqn, port), port=None) as port:
        yield port


def _configure(backing: Device, host: StorageHost, nqn: str, port: str, ctx: BuildContext) -> None:
    subsystem = NVMET / "subsystems" / nqn
    subsystem.mkdir()
    (subsystem / "attr_allow_any_host").write_text("1")
    namespace = subsystem / "namespaces" / "1"
    namespace.mkdir()
    (namespace / "device_path").write_text(backing.path)
    (namespace / "enable").write_text("1")
    port_dir = NVMET / "ports" / port
    port_dir.mkdir()
    for name, value in port_address(host.remote_address).items():
        (port_dir / name).write_text(value)
    link = port_dir / "subsystems" / nqn
    ctx.runner(host.configfs_argv(["ln", "-s", str(subsystem), str(link)]), timeout=60).check()


def port_address(address: str) -> dict[str, str]:
    return {"addr_trtype": "tcp", "addr_adrfam": "ipv4", "addr_traddr": address, "addr_trsvcid": str(PORT)}


def _free_port_id() -> str:
    taken = {p.name for p in (NVMET / "ports").iterdir()}
    for _ in range(100):
        port = str(random.randint(1000, 65000))  # away from the low numbers hand-made ports take
        if port not in taken:
            return port
    raise PrerequisiteError(f"no free NVMe target port id under {NVMET / 'ports'}")


def remove_target(nqn: str, port: str | None) -> None:
    """Unlink the subsystem from our port (its socket closes), remove the port, the namespace and the
    subsystem; each only if it is there, so a half-made target is removed as far as it got."""
    if not nqn.startswith(NQN_PREFIX):
        return
    if port:
        port_dir = NVMET / "ports" / port
        link = port_dir / "subsystems" / nqn
        if link.is_symlink():
            link.unlink()
        if port_dir.is_dir() and not any((port_dir / "subsystems").iterdir()):
            port_dir.rmdir()
    subsystem = NVMET / "subsystems" / nqn
    namespace = subsystem / "namespaces" / "1"
    if namespace.is_dir():
        (namespace / "enable").write_text("0")
        namespace.rmdir()
    if subsystem.is_dir():
        subsystem.rmdir()


@contextmanager
def connected(host: StorageHost, nqn: str, ctx: BuildContext) -> Iterator[Device]:
    def create(rid: int) -> Device:
        try:
            return _connect(host, nqn, ctx)
        except BaseException:
            disconnect(nqn, ctx.runner)
            ctx.ledger.removed(rid)
            raise

    with tracked(ctx.ledger, "nvme-connection", nqn, create, lambda d: disconnect(nqn, ctx.runner)) as dev:
        yield dev


def _connect(host: StorageHost, nqn: str, ctx: BuildContext) -> Device:
    ctx.runner(connect_argv(host.remote_address, nqn), timeout=120).check()
    for ctrl in controllers(nqn):
        with contextlib.suppress(OSError):  # absent on old kernels: ctrl_loss_tmo still bounds it
            (ctrl / "fast_io_fail_tmo").write_text(str(FAST_IO_FAIL_TMO))
    path, size = kernel.appeared(lambda: block_names(nqn), APPEAR_LIMIT_S, f"connected to {nqn}")
    return Device(path, "nvme-tcp", size, {"client": "nvme-tcp (kernel)", "nqn": nqn})


def connect_argv(address: str, nqn: str) -> list[str]:
    return [
        "nvme", "connect", "--transport=tcp", f"--traddr={address}", f"--trsvcid={PORT}", f"--nqn={nqn}",
        f"--ctrl-loss-tmo={CTRL_LOSS_TMO}", f"--reconnect-delay={RECONNECT_DELAY}",
    ]  # fmt: skip


def disconnect(nqn: str, runner: Runner) -> None:
    """`nvme disconnect -n` succeeds with nothing to disconnect; only our NQN is ever named."""
    if nqn.startswith(NQN_PREFIX) and controllers(nqn):
        runner(["nvme", "disconnect", f"--nqn={nqn}"], timeout=120).check()


def controllers(nqn: str, sys: Path = SYS) -> list[Path]:
    return [c for c in kernel.children(sys / "class/nvme") if kernel.read(c / "subsysnqn") == nqn]


def block_names(nqn: str, sys: Path = SYS) -> list[str]:
    """The namespace's block device: under its subsystem with native multipath, else under its controller."""
    subsystems = kernel.children(sys / "class/nvme-subsystem")
    parents = [s for s in subsystems if kernel.read(s / "subsysnqn") == nqn] + controllers(nqn, sys)
    return sorted({d.name for p in parents for d in kernel.children(p) if BLOCK_NAME.fullmatch(d.name)})


def _remove_target(res: Resource, runner: Runner) -> None:
    remove_target(res.ident, res.detail.get("port"))


def _disconnect(res: Resource, runner: Runner) -> None:
    disconnect(res.ident, runner)


# What cleanup removes of a dead run's, by ledger kind.
REMOVERS = {"nvmet": _remove_target, "nvme-connection": _disconnect}
