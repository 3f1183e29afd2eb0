"""One lock file per run: held while the run lives, free once its process is gone.

The kernel drops an flock when its holder dies, even by SIGKILL, so "can I
take this run's lock?" is an honest "is that run dead?" that no stale PID file
can fool. Cleanup never touches what a live run holds.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from layerbench.errors import PrerequisiteError


def lock_path(state_dir: Path, run_id: str) -> Path:
    return state_dir / "locks" / f"{run_id}.lock"


@contextlib.contextmanager
def hold(state_dir: Path, run_id: str) -> Iterator[None]:
    path = lock_path(state_dir, run_id)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise PrerequisiteError(f"run {run_id} is already running in another process") from None
        yield
        # A finished run needs no lock file; one that dies keeps it (free), which is harmless.
        path.unlink(missing_ok=True)
    finally:
        os.close(fd)  # releases the lock


def is_live(state_dir: Path, run_id: str) -> bool:
    path = lock_path(state_dir, run_id)
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
