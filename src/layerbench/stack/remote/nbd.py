"""NBD: qemu-nbd serves the backing device from the storage host; a client here makes it a block device.

qemu-nbd opens the device with O_DIRECT (``--cache=none``), so the server's page cache never answers for
it. Two clients: the kernel's nbd driver (``nbd-client``), where the kernel has it, and nbdfuse, which
shows the export as a file under a FUSE mount, attached to a direct-I/O loop device. The FUSE client
goes through user space twice per request: its numbers are labelled with it ("nbd-fuse") and are no
measure of what a kernel client would do. A third needs no block device: fio's own nbd engine (libnbd)
reaches the export from fio itself ("nbd-fio"), the network's cost without a client driver's.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from layerbench.errors import PrerequisiteError
from layerbench.proc import Runner
from layerbench.spec.models import RemoteSpec
from layerbench.stack.device import attached_loop
from layerbench.stack.ledger import Resource, tracked
from layerbench.stack.remote import fuse, kernel
from layerbench.stack.remote.host import StorageHost
from layerbench.stack.remote.needs import Need
from layerbench.stack.remote.server import serving
from layerbench.stack.target import BuildContext, Device

PORT = 10809  # NBD's registered port
EXPORT = "lb"  # qemu-nbd's export name; a client that names none is served the deprecated oldstyle way
MODULES = ("nbd",)
# What each client needs of this host (features of HostCaps.remote, named by its row in spec/transports/nbd.py).
NEEDS = {
    "nbd": Need({"qemu-nbd": "qemu-utils", "nbdinfo": "libnbd-bin"}),
    "nbd-fuse": Need({"nbdfuse": "libnbd-bin", "fusermount3": "fuse3"}),  # and FUSE and loop (HostCaps has them)
    "nbd-kernel": Need({"nbd-client": "nbd-client"}, MODULES),
    # fio built with its nbd engine (libnbd): a fio without it says so only when asked for the engine's help.
    "nbd-fio": Need(
        {"fio": "fio"}, tried=(("fio", "--enghelp=nbd"), "this fio has no nbd engine (it is built without libnbd)")
    ),
}


def server_argv(device_path: str, address: str, port: int = PORT) -> list[str]:
    """qemu-nbd serving ``device_path`` raw, unbuffered, to any number of connections, until killed."""
    return [
        "qemu-nbd",
        "--persistent",
        "--shared=0",
        f"--bind={address}",
        f"--port={port}",
        "--format=raw",
        "--cache=none",
        "--aio=native",
        f"--export-name={EXPORT}",
        device_path,
    ]


def uri(address: str, port: int = PORT) -> str:
    return f"nbd://{address}:{port}/{EXPORT}"


def size_argv(export_uri: str) -> list[str]:
    """nbdinfo's handshake with the server: answers the export's size once it serves."""
    return ["nbdinfo", "--size", export_uri]


@contextmanager
def attached(backing: Device, host: StorageHost, remote: RemoteSpec, ctx: BuildContext) -> Iterator[Device]:
    export = uri(host.remote_address)
    log = ctx.work_dir / f"qemu-nbd-{host.netns}.log"
    argv = server_argv(backing.path, host.remote_address)
    with serving(host, argv, lambda: _answers(export, ctx.runner), log, ctx):
        if remote.client == "fio":  # fio's nbd engine connects itself: the export is the device
            yield Device(export, "nbd-fio", backing.size_bytes, {"client": "fio nbd engine (libnbd)", "export": export})
        elif remote.client == "fuse":
            with fuse_client(export, backing.size_bytes, ctx) as dev:
                yield dev
        else:
            with kernel_client(host.remote_address, backing.size_bytes, ctx) as dev:
                yield replace(dev, info={**dev.info, "export": export})


def _answers(export_uri: str, runner: Runner) -> bool:
    return runner(size_argv(export_uri), timeout=30).rc == 0


# --- nbdfuse under a loop device ---------------------------------------------


def fuse_argv(pidfile: Path, mountpoint: Path, export_uri: str) -> list[str]:
    """nbdfuse showing the export as ``mountpoint``/disk; it writes ``pidfile`` once it serves."""
    return ["nbdfuse", "-P", str(pidfile), f"{mountpoint}/disk", export_uri]


@contextmanager
def fuse_client(export_uri: str, size: int, ctx: BuildContext) -> Iterator[Device]:
    mountpoint = ctx.work_dir / f"nbdfuse-{uuid.uuid4().hex[:8]}"
    pidfile = mountpoint.with_suffix(".pid")

    argv = fuse_argv(pidfile, mountpoint, export_uri)
    with (
        fuse.mounted("mount", mountpoint, argv, pidfile, "fusermount3", ctx),  # its manual: never kill it
        attached_loop(mountpoint / "disk", size, True, ctx) as loop,
    ):
        info = {**loop.info, "client": "nbdfuse+loop", "export": export_uri}
        yield Device(loop.path, "nbd-fuse", size, info)


# --- the kernel's nbd driver ------------------------------------------------


@contextmanager
def kernel_client(address: str, size: int, ctx: BuildContext) -> Iterator[Device]:
    """A free /dev/nbdN connected to the export by nbd-client (netlink: no process stays behind).
    The device's /sys pid names this connection, so cleanup disconnects it and no later one."""
    kernel.load(MODULES, ctx.runner)

    def create(rid: int) -> Device:
        for name in free_devices():
            done = ctx.runner(client_argv(address, name), timeout=120)
            if done.rc == 0:
                ctx.ledger.update(rid, ident=f"/dev/{name}", pid=kernel.read(kernel.SYS_BLOCK / name / "pid"))
                return Device(f"/dev/{name}", "nbd", size, {"client": "nbd (kernel)"})
            if "Failed to setup device" not in done.stderr:  # not a race for the device: a real failure
                done.check()
        raise PrerequisiteError("no free /dev/nbd device (each has a connection)", hint="modprobe nbd nbds_max=32")

    with tracked(ctx.ledger, "nbd", "nbd-pending", create, lambda d: disconnect(d.path, None, ctx.runner)) as dev:
        yield dev


def client_argv(address: str, name: str, port: int = PORT) -> list[str]:
    return ["nbd-client", "-N", EXPORT, address, str(port), f"/dev/{name}"]


def free_devices() -> list[str]:
    """nbd devices with no connection: no pid file, and size 0."""
    found = [d for d in kernel.SYS_BLOCK.glob("nbd*") if d.name[3:].isdigit()]
    free = [d.name for d in found if not (d / "pid").exists() and kernel.read(d / "size") in ("0", "")]
    return sorted(free, key=lambda n: int(n[3:]))


def disconnect(dev_path: str, pid: str | None, runner: Runner) -> None:
    """``nbd-client -d``, while the device still has a connection (``pid``: only if it is that one)."""
    current = kernel.read(kernel.SYS_BLOCK / Path(dev_path).name / "pid")
    if not current or (pid is not None and current != pid):
        return
    runner(["nbd-client", "-d", dev_path], timeout=120).check()


def reclaim(res: Resource, runner: Runner) -> None:
    """A dead run's kernel client: disconnected if the device still has that connection."""
    if res.ident.startswith("/dev/nbd"):  # "nbd-pending": it never connected
        disconnect(res.ident, res.detail.get("pid") or "", runner)


# What cleanup removes of a dead run's, by ledger kind (the server and the FUSE mount are generic kinds).
REMOVERS = {"nbd": reclaim}
