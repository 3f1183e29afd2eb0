"""The image's clients here: fio's own rbd engine (librbd, no block device: the device is the image's URI),
rbd-fuse showing the image as a file under a direct-I/O loop device, and the kernel's rbd driver (krbd).

rbd-fuse goes through user space twice per request: its numbers are labelled with it ("rbd-fuse") and are
no measure of what krbd would do."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from layerbench.proc import Runner
from layerbench.spec.transports.rbd import export_uri
from layerbench.stack import handle
from layerbench.stack.device import attached_loop, read_or_empty
from layerbench.stack.ledger import Resource, tracked
from layerbench.stack.remote import fuse, kernel
from layerbench.stack.remote.ceph import cli
from layerbench.stack.remote.ceph.cluster import Cluster
from layerbench.stack.target import BuildContext, Device

MODULES = ("rbd",)


def fio_device(c: Cluster) -> Device:
    """The image's URI for fio's rbd engine; in a container, the conf it names is ours for a container (bound
    there in its place) and the keyring is bound at its own path, both read-only."""
    uri = export_uri(str(c.conf), c.pool, c.image, c.user)
    c.paths.container_conf.write_text(container_conf(c.conf.read_text(), c.user))
    files = {str(c.conf): str(c.paths.container_conf), str(c.client_keyring): str(c.client_keyring)}
    return Device(
        uri, "rbd-fio", c.image_bytes, {"client": "fio rbd engine (librbd)", "export": uri, "client_files": files}
    )


def container_conf(text: str, user: str) -> str:
    """The run's conf as a container's client reads it: without a log file or an admin socket, whose
    directories are this host's (a later section of the same name adds to the first, its keys winning)."""
    ours = f"# fio in a container: the run's directories are not there\n[client.{user}]\nlog file =\nadmin socket =\n"
    return f"{text.rstrip()}\n\n{ours}"


def fuse_argv(conf: cli.Access, pool: str, image: str, mountpoint: Path) -> list[str]:
    """rbd-fuse in the foreground (a child of this process), showing ``image`` alone as mountpoint/image."""
    return ["rbd-fuse", "-c", str(conf.conf), "--id", conf.user, "-p", pool, "-r", image, str(mountpoint), "-f"]


@contextmanager
def fuse_device(c: Cluster, ctx: BuildContext) -> Iterator[Device]:
    mountpoint = ctx.work_dir / f"rbd-fuse-{uuid.uuid4().hex[:8]}"
    shown = mountpoint / c.image

    argv = fuse_argv(c.access, c.pool, c.image, mountpoint)
    with (
        fuse.mounted("rbd-fuse", mountpoint, argv, shown, "fusermount", ctx),
        attached_loop(shown, c.image_bytes, True, ctx) as loop,
    ):
        yield Device(loop.path, "rbd-fuse", c.image_bytes, {**loop.info, "client": "rbd-fuse+loop"})


def reclaim_fuse(res: Resource, runner: Runner) -> None:
    """A dead run's rbd-fuse: its mount lazily detached, then the process ended if it is still that one (with
    its cluster gone, rbd-fuse waits forever to close the image once unmounted)."""
    mountpoint = Path(res.ident)
    if f" {mountpoint} " in read_or_empty("/proc/mounts"):
        runner(["umount", "-l", str(mountpoint)], timeout=60).check()
    handle.kill_if_same(int(res.detail.get("pid", 0)), res.detail.get("start_time"))
    with contextlib.suppress(FileNotFoundError):
        mountpoint.rmdir()


@contextmanager
def kernel_device(c: Cluster, ctx: BuildContext) -> Iterator[Device]:
    """krbd: `rbd device map` makes the image /dev/rbdN (no process stays behind); unmapped at the end."""
    kernel.load(MODULES, ctx.runner)
    spec = f"{c.pool}/{c.image}"

    def create(rid: int) -> Device:
        path = cli.rbd(ctx.runner, c.access, "device", "map", spec, timeout=120).strip()
        ctx.ledger.update(rid, ident=path)
        return Device(path, "rbd-kernel", c.image_bytes, {"client": "krbd"})

    unmap = lambda d: cli.rbd(ctx.runner, c.access, "device", "unmap", d.path, timeout=120)  # noqa: E731
    with tracked(ctx.ledger, "rbd-map", "rbd-pending", create, unmap) as dev:
        yield dev
