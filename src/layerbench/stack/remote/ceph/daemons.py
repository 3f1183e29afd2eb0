"""Ceph's daemons, each in the foreground (``-f``) as a child of this process, on this host or on a storage
host, recorded in the ledger with its PID and start time (so `layerbench cleanup` ends that process and no
other), ready when the cluster says so, stopped with SIGTERM."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from layerbench.errors import ToolError
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


class Daemon:
    """A daemon this process started, which a trial may stop and start again (an OSD taken down and brought
    back: cluster.state). Its ledger row follows it: each start records the new PID and start time."""

    def __init__(self, argv: Sequence[str], where: list[str], log: Path, ctx: BuildContext, rid: int) -> None:
        self.argv, self._where, self._log, self._ctx, self._rid = list(argv), where, log, ctx, rid
        self.proc: handle.NativeHandle | None = None

    def start(self, ready: Callable[[], bool]) -> None:
        self.proc = handle.start_native(self._where, self._log, user=None)
        self._ctx.ledger.update(self._rid, pid=self.proc.pid, start_time=handle.start_time(self.proc.pid))
        try:
            wait_until(ready, self.proc, self.argv)
        except BaseException:
            self.stop()
            raise

    def check_alive(self) -> None:
        """Raises, with its log's tail, where the daemon has died."""
        if self.proc is not None and not self.proc.alive():
            raise ToolError(self.argv, self.proc.process.returncode, handle.log_tail(self.proc.log))

    def stalled(self, why: str) -> None:
        """Raises: the daemon lives and never became ready."""
        tail = handle.log_tail(self.proc.log) if self.proc is not None else ""
        raise ToolError(self.argv, None, f"{why}\n{tail}")

    def stop(self) -> None:
        """SIGTERM (an OSD tells the monitor it is going down), SIGKILL after the grace."""
        if self.proc is not None and self.proc.alive():
            handle.stop(self.proc, signal.SIGTERM, STOP_GRACE_S)

    def up(self) -> bool:
        return self.proc is not None and self.proc.alive()


@contextmanager
def running(
    argv: Sequence[str], ready: Callable[[], bool], log: Path, ctx: BuildContext, host: StorageHost | None = None
) -> Iterator[Daemon]:
    """``argv`` running (on ``host``, else here) until the context ends, once ``ready()`` is true."""
    where = host.argv(argv) if host else list(argv)

    def create(rid: int) -> Daemon:
        daemon = Daemon(argv, where, log, ctx, rid)
        try:
            daemon.start(ready)
        except BaseException:
            ctx.ledger.removed(rid)
            raise
        return daemon

    netns = {"netns": host.netns} if host else {}
    with tracked(ctx.ledger, "server", argv[0], create, Daemon.stop, **netns) as daemon:
        yield daemon
