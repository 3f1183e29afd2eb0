"""`layerbench publish`: a finished run copied from one store (a host's SQLite file) into another (the team's
PostgreSQL database), whole or not at all.

The whole run is one transaction of the target: nobody reads half a run, and a publish interrupted midway
(killed, its connection lost) left nothing, so it is simply repeated. Its trials get the target's own ids
(another host's trial 7 is not this database's trial 7): ids are drawn from the target's sequence first,
then every row that names a trial is written with the new one. The bulk (samples, monitor points, logs) is
loaded with COPY, each trial's rows in the order they were recorded.

A run id already in the target is the same run published before (its start, host and spec digest agree):
it is stored once, and a second publish says so. A run of another host that happens to share its id
(ids are a second's timestamp and 16 random bits) is refused rather than mistaken for it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from layerbench.errors import StoreError
from layerbench.store.db import Rows, Store

# The tables copied row by row with their trial id remapped, each in the order its rows were recorded.
TRIAL_TABLES: tuple[tuple[str, str], ...] = (
    ("samples", "trial_id, metric, value, unit, direction, job"),
    ("checks", "trial_id, name, status, detail"),
    ("monitor", "trial_id, t, series, value, unit"),
    ("logs", "trial_id, name, text"),
    ("profiles", "trial_id, kind, folded, counters_json, detail"),
)
TRIAL_COLUMNS = (
    "id, run_id, cell_id, repetition, status, category, started_at, ended_at, argv_json, raw_output, stderr, info_json"
)


@dataclass(frozen=True)
class Published:
    run_id: str
    target: str  # the target's location (no password)
    stored: bool  # False: the run was there already (published before)
    trials: int
    samples: int
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "to": self.target,
            "stored": self.stored,
            "trials": self.trials,
            "samples": self.samples,
            "seconds": round(self.seconds, 3),
        }


def publish(source: Store, run_ref: str, target: Store) -> Published:
    """Copy run ``run_ref`` of ``source`` into ``target`` (a PostgreSQL store) in one transaction."""
    began = time.monotonic()
    if target.path is not None:
        raise StoreError(f"publish copies a run into a PostgreSQL store, not into {target.location}")
    run_id = source.resolve_run(run_ref)
    row = tuple(source.db.execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()[:9])
    if row[4] == "running":
        raise StoreError(
            f"run {run_id} is still running (pid {row[8]}): publish a run once it has ended",
            hint="wait for it, or if its process is gone, `layerbench resume` it to an end first",
        )
    trial_ids = [int(r[0]) for r in source.db.execute("SELECT id FROM trials WHERE run_id=? ORDER BY id", (run_id,))]
    with target.db.transaction():
        target.db.execute("SELECT pg_advisory_xact_lock(hashtext(?))", (run_id,))  # one publisher of a run at a time
        if _already_there(target, row, len(trial_ids)):
            return Published(run_id, target.location, False, len(trial_ids), 0, time.monotonic() - began)
        samples = _copy(source, row, trial_ids, target)
    return Published(run_id, target.location, True, len(trial_ids), samples, time.monotonic() - began)


def _copy(source: Store, row: tuple[Any, ...], trial_ids: list[int], target: Store) -> int:
    """The run (its ``runs`` row given) written into ``target``'s open transaction; its samples counted."""
    run_id = row[0]
    target.db.bulk("runs", [row])
    cells = source.db.execute("SELECT * FROM cells WHERE run_id=? ORDER BY rowid", (run_id,))
    target.db.bulk("cells", (tuple(c[:8]) for c in cells))
    refused = source.db.execute("SELECT * FROM refused WHERE run_id=? ORDER BY rowid", (run_id,))
    target.db.bulk("refused", (tuple(r[:4]) for r in refused))
    renumber = dict(zip(trial_ids, _new_trial_ids(target, len(trial_ids)), strict=True))
    with _trial_map(source, renumber):
        target.db.bulk("trials", _rows(source, "trials", TRIAL_COLUMNS))
        copied = {table: target.db.bulk(table, _rows(source, table, columns)) for table, columns in TRIAL_TABLES}
    return copied["samples"]


def _already_there(target: Store, row: tuple[Any, ...], trials: int) -> bool:
    """Is the run in ``target`` already (True), or not at all (False)? Another run of its id is refused."""
    there = target.db.execute("SELECT * FROM runs WHERE id=?", (row[0],)).fetchone()
    if there is None:
        return False
    same = there[2] == row[2] and there[6] == row[6] and _hostname(there[7]) == _hostname(row[7])
    if not same:
        raise StoreError(
            f"{target.location} holds another run with id {row[0]} (another start, host or spec)",
            hint="this run cannot be published there under its id; export it instead (layerbench export)",
        )
    count = int(target.db.execute("SELECT count(*) FROM trials WHERE run_id=?", (row[0],)).fetchone()[0])
    if count != trials:
        raise StoreError(
            f"run {row[0]} is in {target.location} with {count} trials, here with {trials}",
            hint="it was resumed or extended after it was published: a published run is never changed",
        )
    return True


def _hostname(host_json: str) -> Any:
    return json.loads(host_json).get("hostname")


def _new_trial_ids(target: Store, count: int) -> list[int]:
    """``count`` ids from the target's own sequence of trial ids (never handed out twice, even to another
    publisher at the same moment)."""
    if not count:
        return []
    rows = target.db.execute(
        "SELECT nextval(pg_get_serial_sequence('trials', 'id')) FROM generate_series(1, ?)", (count,)
    ).fetchall()
    return [int(r[0]) for r in rows]


MAP = "publish_trials"  # the source's temporary table of old and new trial ids


def _rows(source: Store, table: str, columns: str) -> Rows:
    """The run's trials (``trials``), or ``table``'s rows of them, each trial's in the order recorded, with
    the trials' new ids (those in ``MAP``): renumbered by the source's own join (SQLite handed 2.7M monitor
    points to Python in 3.5 s so, 4.6 s with each row renumbered in Python), read as it goes, by the
    trial-id index where the table has one, so that SQLite sorts nothing."""
    # One row per trial (a trial, a profile): by its key; the others in the order they were recorded.
    order = "m.was" if table in ("trials", "profiles") else "m.was, x.rowid"
    key = "id" if table == "trials" else "trial_id"
    fields = ", ".join(f"x.{c.strip()}" for c in columns.split(",")[1:])
    # CROSS JOIN: SQLite walks the map first, in its key's order, then each trial's rows by the index (a
    # trial by its rowid: `WHERE run_id=? ORDER BY id` sorted a big run's 1.8 GB of trials first, 2.9 s).
    sql = f"SELECT m.becomes, {fields} FROM {MAP} m CROSS JOIN {table} x WHERE x.{key} = m.was ORDER BY {order}"
    return source.db.execute(sql)


@contextmanager
def _trial_map(source: Store, renumber: dict[int, int]) -> Iterator[None]:
    """``MAP``: the run's trial ids in the source and their new ids, while the rows are copied."""
    with source.db.transaction():
        source.db.execute(f"DROP TABLE IF EXISTS {MAP}")  # a publish stopped before its end may have left it
        # INTEGER PRIMARY KEY: SQLite's rowid, read in order without a sort (a PostgreSQL source's int4: ids to 2^31)
        source.db.execute(f"CREATE TEMPORARY TABLE {MAP} (was INTEGER PRIMARY KEY, becomes BIGINT NOT NULL)")
        source.db.executemany(f"INSERT INTO {MAP} VALUES (?, ?)", list(renumber.items()))
    try:
        yield
    finally:
        with source.db.transaction():
            source.db.execute(f"DROP TABLE {MAP}")
