"""An SQLite file that no reader ever sees without its tables.

A reader that waits for a results database or a ledger to appear (a test,
`layerbench show` on a run that is starting, `cleanup` beside a run) used to
open the file between its creation and its schema and fail with "no such
table". A new file is therefore made under a temporary name beside it, given
its schema there, and linked into place: link, not rename, so that a file
another process made meanwhile is kept and the loser's copy is dropped.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sqlite3
from collections.abc import Callable
from pathlib import Path


def ensure(path: Path, init: Callable[[sqlite3.Connection], None]) -> None:
    """Create `path` with `init` applied, unless it exists already."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.new")
    try:
        conn = sqlite3.connect(fresh, isolation_level=None)
        try:
            init(conn)
        finally:
            conn.close()  # the last connection closing checkpoints WAL into the file itself
        with contextlib.suppress(FileExistsError):
            os.link(fresh, path)
    finally:
        for leftover in (fresh, fresh.with_name(fresh.name + "-wal"), fresh.with_name(fresh.name + "-shm")):
            leftover.unlink(missing_ok=True)
