"""A FUSE client that shows a remote image as a file (nbdfuse, rbd-fuse): started in the foreground under a PID
of its own, recorded in the ledger first, ready once the file it shows exists, and ended by unmounting it."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from layerbench.proc import Runner
from layerbench.stack import handle
from layerbench.stack.ledger import tracked
from layerbench.stack.remote.server import wait_until
from layerbench.stack.target import BuildContext


@contextmanager
def mounted(
    kind: str, mountpoint: Path, argv: list[str], ready: Path, fusermount: str, ctx: BuildContext
) -> Iterator[None]:
    """``argv`` mounting at ``mountpoint`` (recorded as ledger ``kind``), until ``ready`` exists; unmounted with
    ``fusermount -u`` (the clean end both clients' manuals ask for) when the block ends."""

    def mount(rid: int) -> handle.NativeHandle:
        mountpoint.mkdir(mode=0o700)
        proc = handle.start_native(argv, mountpoint.with_suffix(".log"), user=None)
        ctx.ledger.update(rid, pid=proc.pid, start_time=handle.start_time(proc.pid))
        try:
            wait_until(ready.exists, proc, argv)
        except BaseException:
            unmount(mountpoint, proc, fusermount, ctx.runner)
            ctx.ledger.removed(rid)
            raise
        return proc

    with tracked(ctx.ledger, kind, str(mountpoint), mount, lambda p: unmount(mountpoint, p, fusermount, ctx.runner)):
        yield


def unmount(mountpoint: Path, proc: handle.NativeHandle, fusermount: str, runner: Runner) -> None:
    """Unmounting ends the client; a lazy unmount if that fails, SIGKILL only if it lingers."""
    if proc.alive() and runner([fusermount, "-u", str(mountpoint)], timeout=60).rc != 0:
        runner(["umount", "-l", str(mountpoint)], timeout=60)
    if proc.wait(30.0) is None:
        handle.stop(proc, signal.SIGKILL, 0.0)
    if mountpoint.exists():
        mountpoint.rmdir()
