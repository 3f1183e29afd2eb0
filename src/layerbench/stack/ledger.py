"""The ledger: every resource layerbench creates, recorded *before* it exists.

A row is written before the resource is created and marked removed after it is
gone, so a run killed at any point leaves a list of what may still exist, and
``layerbench cleanup`` can remove it. The ledger is a small SQLite file in the
state directory, separate from the results database, because it belongs to the
host, not to an experiment.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from layerbench.core import sqlitefile

T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS resources (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL,
    pid INTEGER NOT NULL,
    kind TEXT NOT NULL,
    ident TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT '{}',
    created_at REAL NOT NULL,
    removed_at REAL
);
"""


@dataclass(frozen=True)
class Resource:
    id: int
    run_id: str
    pid: int
    kind: str
    ident: str
    detail: dict[str, Any]


def _init(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(SCHEMA)


class Ledger:
    def __init__(self, path: Path, run_id: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.path = path
        self.run_id = run_id
        sqlitefile.ensure(path, _init)
        # One connection for the run, shared by the threads that tear held stacks down together (stack/pool.py):
        # every use holds the lock, so an update's read and write are one step.
        self._db = sqlite3.connect(path, isolation_level=None, timeout=30, check_same_thread=False)
        self._lock = threading.Lock()
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def record(self, kind: str, ident: str, **detail: Any) -> int:
        with self._lock:
            cur = self._db.execute(
                "INSERT INTO resources (run_id, pid, kind, ident, detail, created_at) VALUES (?,?,?,?,?,?)",
                (self.run_id, os.getpid(), kind, ident, json.dumps(detail), time.time()),
            )
        return int(cur.lastrowid or 0)

    def update(self, rid: int, ident: str | None = None, **detail: Any) -> None:
        with self._lock:
            row = self._db.execute("SELECT ident, detail FROM resources WHERE id=?", (rid,)).fetchone()
            merged = {**json.loads(row[1]), **detail}
            self._db.execute(
                "UPDATE resources SET ident=?, detail=? WHERE id=?",
                (ident or row[0], json.dumps(merged), rid),
            )

    def removed(self, rid: int) -> None:
        with self._lock:
            self._db.execute("UPDATE resources SET removed_at=? WHERE id=?", (time.time(), rid))

    def live(self, run_id: str | None = None) -> list[Resource]:
        """Resources not yet marked removed (of one run, or of all), newest first."""
        sql = "SELECT id, run_id, pid, kind, ident, detail FROM resources WHERE removed_at IS NULL"
        args: tuple[str, ...] = ()
        if run_id is not None:
            sql += " AND run_id=?"
            args = (run_id,)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY id DESC", args).fetchall()
        return [Resource(r[0], r[1], r[2], r[3], r[4], json.loads(r[5])) for r in rows]


@contextmanager
def tracked(
    ledger: Ledger,
    kind: str,
    ident: str,
    create: Callable[[int], T],
    remove: Callable[[T], None],
    **detail: Any,
) -> Iterator[T]:
    """Record, create, yield, remove, mark removed: the life of every resource.

    ``create`` gets the ledger row id so it can add what it learns (a loop
    device's name, a daemon's pid) with ``ledger.update``. If ``create`` fails
    the row stays live: it may have half-happened, and cleanup will look.
    """
    rid = ledger.record(kind, ident, **detail)
    obj = create(rid)
    try:
        yield obj
    finally:
        remove(obj)
        ledger.removed(rid)
