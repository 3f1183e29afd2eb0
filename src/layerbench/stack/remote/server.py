"""A target's server process on the storage host: started in its namespace, recorded with its PID and
start time (so cleanup ends that process and no other), ready when a probe command says so."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from layerbench.errors import ToolError
from layerbench.stack import handle
from layerbench.stack.ledger import tracked
from layerbench.stack.remote.host import StorageHost
from layerbench.stack.target import BuildContext

READY_LIMIT_S = 60.0  # a server that has neither answered nor died by then is reported stuck
POLL_S = 0.1


@contextmanager
def serving(
    host: StorageHost, argv: Sequence[str], ready: Callable[[], bool], log: Path, ctx: BuildContext
) -> Iterator[handle.NativeHandle]:
    """``argv`` running on ``host`` until exit, once ``ready()`` is true; stopped with SIGTERM."""

    def create(rid: int) -> handle.NativeHandle:
        proc = handle.start_native(host.argv(argv), log, user=None)
        ctx.ledger.update(rid, pid=proc.pid, start_time=handle.start_time(proc.pid))
        try:
            wait_until(ready, proc, argv)
        except BaseException:
            handle.stop(proc, signal.SIGTERM, 10.0)
            ctx.ledger.removed(rid)
            raise
        return proc

    with tracked(ctx.ledger, "server", argv[0], create, lambda p: _stop(p, argv), netns=host.netns) as proc:
        yield proc


def wait_until(ready: Callable[[], bool], proc: handle.NativeHandle, argv: Sequence[str]) -> None:
    """Poll ``ready`` while the server lives; its death or a stall is an error with its log's tail."""
    deadline = time.monotonic() + READY_LIMIT_S
    while not ready():
        if not proc.alive():
            raise ToolError(list(argv), proc.process.returncode, handle.log_tail(proc.log))
        if time.monotonic() > deadline:
            raise ToolError(list(argv), None, f"not ready after {READY_LIMIT_S:.0f}s\n{handle.log_tail(proc.log)}")
        time.sleep(POLL_S)


def _stop(proc: handle.NativeHandle, argv: Sequence[str]) -> None:
    handle.stop(proc, signal.SIGTERM, 10.0)
