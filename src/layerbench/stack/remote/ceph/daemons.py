"""Ceph's daemons, each in the foreground (``-f``) as a child of this process, on this host or on a storage
host, recorded in the ledger with its PID and start time (so `layerbench cleanup` ends that process and no
other), ready when the cluster says so, stopped with SIGTERM."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from layerbench.stack import handle
from layerbench.stack.ledger import tracked
from layerbench.stack.remote.host import StorageHost
from layerbench.stack.remote.server import wait_until
from layerbench.stack.target import BuildContext

STOP_GRACE_S = 20.0  # an OSD flushes its store on SIGTERM


def mon_argv(conf: Path, ident: str) -> list[str]:
    return ["ceph-mon", "-f", "--conf", str(conf), "--id", ident]


def mgr_argv(conf: Path, ident: str) -> list[str]:
    return ["ceph-mgr", "-f", "--conf", str(conf), "--id", ident]


def osd_argv(conf: Path, osd_id: int, address: str, host_name: str) -> list[str]:
    """An OSD on its storage host: its address there for clients and replication, and its place in the CRUSH map
    (a host of its own, so replicas go to different hosts as in production)."""
    return [
        "ceph-osd", "-f", "--conf", str(conf), "--id", str(osd_id),
        f"--public-addr={address}", f"--cluster-addr={address}",
        f"--crush-location=root=default host={host_name}",
    ]  # fmt: skip


@contextmanager
def running(
    argv: Sequence[str], ready: Callable[[], bool], log: Path, ctx: BuildContext, host: StorageHost | None = None
) -> Iterator[handle.NativeHandle]:
    """``argv`` running (on ``host``, else here) until the context ends, once ``ready()`` is true."""
    where = host.argv(argv) if host else list(argv)

    def create(rid: int) -> handle.NativeHandle:
        proc = handle.start_native(where, log, user=None)
        ctx.ledger.update(rid, pid=proc.pid, start_time=handle.start_time(proc.pid))
        try:
            wait_until(ready, proc, argv)
        except BaseException:
            handle.stop(proc, signal.SIGTERM, STOP_GRACE_S)
            ctx.ledger.removed(rid)
            raise
        return proc

    netns = {"netns": host.netns} if host else {}
    with tracked(ctx.ledger, "server", argv[0], create, _stop, **netns) as proc:
        yield proc


def _stop(proc: handle.NativeHandle) -> None:
    handle.stop(proc, signal.SIGTERM, STOP_GRACE_S)
