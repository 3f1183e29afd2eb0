"""The results store: SQLite in WAL mode (or a shared PostgreSQL, store/pg.py), one transaction per finished
trial.

Raw samples and raw tool output are kept; statistics are computed when read,
so a better analysis later applies to old runs too. The queries are written once, in SQLite's spelling;
a backend (``Backend``: SQLite's here, PostgreSQL's in store/pg.py) runs them and does the few things the two
do differently (a transaction, a new row's id, a bulk load, a temporary table).
"""

from __future__ import annotations

import gc
import json
import os
import secrets
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from layerbench.core import sqlitefile
from layerbench.errors import StoreError
from layerbench.records.checks import Check
from layerbench.records.run import CellRow, RunRow
from layerbench.records.trial import ProfileRecord, TrialRecord
from layerbench.store.schema import MIGRATIONS, VERSION, statements

if TYPE_CHECKING:  # pandas is seconds of a process's start under emulation: only a reader of frames pays it
    import pandas as pd

# Long enough for another process to finish committing a trial; a real deadlock still surfaces.
BUSY_TIMEOUT_S = 30.0


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector off while a run is read: the millions of rows it reads are acyclic tuples and
    records, freed by reference counting, yet every few thousand new ones start a pass over all of them
    (0.65 s of a 1M-sample load). Back as it was afterwards, so a cycle made meanwhile is collected then."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@dataclass(frozen=True)
class RefusedRow:
    label: str
    config_json: str
    reason: str


@dataclass(frozen=True)
class CheckRow:
    """A check's verdict on one trial (the one check type, records.checks.Check), with the trial's cell and
    repetition."""

    trial_id: int
    cell_id: str
    repetition: int
    check: Check

    @classmethod
    def of(cls, row: tuple[Any, ...]) -> CheckRow:
        """A row of ``Store.check_rows``: the trial's id, cell and repetition, then the check's fields."""
        trial_id, cell_id, repetition, *check = row
        return cls(trial_id, cell_id, repetition, Check(*check))

    # The check's fields read through, for the readers that filter rows by them.
    @property
    def name(self) -> str:
        return self.check.name

    @property
    def status(self) -> str:
        return self.check.status

    @property
    def detail(self) -> str:
        return self.check.detail


@dataclass(frozen=True)
class TrialRow:
    id: int
    cell_id: str
    repetition: int
    status: str
    category: str | None
    started_at: float
    ended_at: float
    stderr: str


class Rows(Protocol):
    """What a query's cursor gives back (sqlite3's and psycopg's alike)."""

    def fetchall(self) -> list[Any]: ...
    def fetchone(self) -> Any: ...
    def __iter__(self) -> Iterator[Any]: ...


class Backend(Protocol):
    """One database's way of running the store's queries (written in SQLite's spelling, ``?`` placeholders)."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows: ...
    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...
    def transaction(self) -> AbstractContextManager[Any]: ...
    def snapshot(self) -> AbstractContextManager[Any]:
        """A read transaction: every query in it sees the same committed trials."""
        ...

    def insert_id(self, sql: str, params: Sequence[Any]) -> int:
        """Run an INSERT into a table with an ``id`` primary key; the new row's id."""
        ...

    def bulk(self, table: str, rows: Iterable[Sequence[Any]]) -> int:
        """Rows appended to ``table``, every column in order (within the caller's transaction); how many."""
        ...

    def kinds_table(self, table: str, names: tuple[str, ...]) -> str:
        """A fresh temporary table ``{table}_kinds`` of ``names`` (texts) numbered by ``rowid``; its qualified name."""
        ...

    def close(self) -> None: ...


class SqliteBackend:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        return self.conn.execute(sql, params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.conn.executemany(sql, rows)

    def transaction(self) -> AbstractContextManager[Any]:
        return self.conn

    def snapshot(self) -> AbstractContextManager[Any]:
        return self.conn

    def insert_id(self, sql: str, params: Sequence[Any]) -> int:
        return int(self.conn.execute(sql, params).lastrowid or 0)

    def bulk(self, table: str, rows: Iterable[Sequence[Any]]) -> int:
        each = iter(rows)
        first = next(each, None)
        if first is None:
            return 0
        cur = self.conn.executemany(f"INSERT INTO {table} VALUES ({','.join('?' * len(first))})", [first, *each])
        return cur.rowcount

    def kinds_table(self, table: str, names: tuple[str, ...]) -> str:
        fields = ", ".join(names)
        self.conn.execute(f"DROP TABLE IF EXISTS temp.{table}_kinds")
        self.conn.execute(f"CREATE TEMP TABLE {table}_kinds ({fields}, PRIMARY KEY ({fields}))")
        return f"temp.{table}_kinds"

    def close(self) -> None:
        self.conn.close()


class Store:
    """The runs of one database. ``conn``: its connection (sqlite3's or psycopg's); ``path``: an SQLite file's,
    None for a PostgreSQL database; ``location``: where it is, as messages name it (a URL without password);
    ``cache_dir``: where store/cache.py keeps what it derives from the runs."""

    def __init__(
        self,
        conn: Any,
        path: Path | None,
        backend: Backend | None = None,
        location: str | None = None,
        cache_dir: Path | None = None,
    ) -> None:
        self.conn = conn
        self.path = path
        self.db: Backend = backend or SqliteBackend(conn)
        self.location = location or str(path)
        self.cache_dir = cache_dir or (path.with_name(path.name + "-cache") if path else None)

    @classmethod
    def open(cls, path: Path, create: bool = True, writes: bool = False) -> Store:
        """The database at ``path``; ``create`` makes it if missing. A writer (``create`` or ``writes``: a run,
        a resume) puts it in WAL mode, so `show` can read while it writes; a reader leaves the file's
        journal mode as it found it (a database committed in rollback mode stays byte for byte the same)."""
        if not create and not path.exists():
            raise StoreError(f"no results database at {path}", hint="run an experiment first, or pass --db")
        try:
            sqlitefile.ensure(path, lambda fresh: _init(fresh, path))
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot create results database {path}: {exc}", hint="use another --db") from exc
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S)
        try:
            if create or writes:
                _use_wal(conn)
            conn.execute("PRAGMA foreign_keys=ON")
            migrate(conn, path)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(
                f"cannot open results database {path}: {exc}",
                hint="is it a layerbench database, and is no other process holding it locked? Or use another --db",
            ) from exc
        except BaseException:
            conn.close()
            raise
        return cls(conn, path)

    def close(self) -> None:
        self.db.close()

    # -- writes ---------------------------------------------------------------

    def new_run(self, name: str, spec_json: str, spec_digest: str, host: dict[str, Any]) -> str:
        run_id = time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)
        with self.db.transaction():
            self.db.execute(
                "INSERT INTO runs VALUES (?,?,?,NULL,'running',?,?,?,?)",
                (run_id, name, time.time(), spec_json, spec_digest, json.dumps(host), os.getpid()),
            )
        return run_id

    def add_cells(self, run_id: str, cells: list[CellRow]) -> None:
        with self.db.transaction():
            self.db.executemany(
                "INSERT INTO cells VALUES (?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING",
                [
                    (
                        run_id,
                        c.cell_id,
                        c.label,
                        c.stack_label,
                        c.workload,
                        c.config_json,
                        int(c.is_baseline),
                        c.baseline_cell_id,
                    )
                    for c in cells
                ],
            )

    def add_refused(self, run_id: str, label: str, config_json: str, reason: str) -> None:
        with self.db.transaction():
            self.db.execute("INSERT INTO refused VALUES (?,?,?,?)", (run_id, label, config_json, reason))

    def record_trial(self, run_id: str, t: TrialRecord) -> int:
        """Everything about one trial in one transaction: all of it is saved, or none."""
        with self.db.transaction():
            tid = self.db.insert_id(
                "INSERT INTO trials (run_id, cell_id, repetition, status, category, started_at, ended_at,"
                " argv_json, raw_output, stderr, info_json) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    run_id,
                    t.cell_id,
                    t.repetition,
                    t.status,
                    t.category,
                    t.started_at,
                    t.ended_at,
                    json.dumps(t.argv),
                    t.raw_output,
                    t.stderr,
                    json.dumps(t.info.to_json(), default=str),
                ),
            )
            self.db.bulk("samples", [(tid, s.metric, s.value, s.unit, s.direction, s.job) for s in t.samples])
            self.db.bulk("checks", [(tid, c.name, c.status, c.detail) for c in t.checks])
            self.db.bulk("monitor", [(tid, m.t, m.series, m.value, m.unit) for m in t.monitor])
            self.db.bulk("logs", [(tid, k, v) for k, v in t.logs.items()])
            if t.profile is not None:
                p = t.profile
                folded = "\n".join(f"{stack} {n}" for stack, n in p.folded.items())
                self.db.bulk("profiles", [(tid, p.kind, folded, json.dumps(p.counters), p.detail)])
        return tid

    def mark(self, run_id: str, status: str) -> None:
        """A resumed run is running again."""
        with self.db.transaction():
            self.db.execute("UPDATE runs SET status=?, finished_at=NULL WHERE id=?", (status, run_id))

    def finish_run(self, run_id: str, status: str) -> None:
        with self.db.transaction():
            self.db.execute("UPDATE runs SET status=?, finished_at=? WHERE id=?", (status, time.time(), run_id))

    # -- reads ----------------------------------------------------------------

    def runs(self) -> list[RunRow]:
        rows = self.db.execute("SELECT * FROM runs ORDER BY started_at DESC, id DESC").fetchall()
        return [_run_row(r) for r in rows]

    def resolve_run(self, ref: str) -> str:
        ids = [r.id for r in self.runs()]
        if not ids:
            raise StoreError(f"no runs in {self.location}", hint="run an experiment first: layerbench run smoke")
        if ref == "latest":
            return ids[0]
        if ref in ids:
            return ref
        matches = [i for i in ids if i.startswith(ref)]
        if len(matches) == 1:
            return matches[0]
        known = ", ".join(ids[:5]) + (" ..." if len(ids) > 5 else "")
        what = "matches several runs" if matches else "matches no run"
        raise StoreError(f"run {ref!r} {what}", hint=f"known runs (newest first): {known}; or 'latest'")

    def run(self, run_id: str) -> RunRow:
        row = self.db.execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()
        if row is None:
            raise StoreError(f"no run {run_id!r} in {self.location}")
        return _run_row(row)

    def cells(self, run_id: str) -> list[CellRow]:
        rows = self.db.execute("SELECT * FROM cells WHERE run_id=? ORDER BY rowid", (run_id,)).fetchall()
        return [CellRow(r[1], r[2], r[3], r[4], r[5], bool(r[6]), r[7]) for r in rows]

    def refused(self, run_id: str) -> list[RefusedRow]:
        rows = self.db.execute("SELECT label, config_json, reason FROM refused WHERE run_id=?", (run_id,))
        return [RefusedRow(*r) for r in rows.fetchall()]

    def trials(self, run_id: str) -> list[TrialRow]:
        rows = self.db.execute(
            "SELECT id, cell_id, repetition, status, category, started_at, ended_at, stderr FROM trials"
            " WHERE run_id=? ORDER BY id",
            (run_id,),
        ).fetchall()
        return [TrialRow(*r) for r in rows]

    def done_trials(self, run_id: str) -> set[tuple[str, int]]:
        rows = self.db.execute("SELECT cell_id, repetition FROM trials WHERE run_id=?", (run_id,))
        return {(r[0], r[1]) for r in rows.fetchall()}

    def checks(self, run_id: str) -> list[CheckRow]:
        return [CheckRow.of(r) for r in self.check_rows(run_id)]

    def check_rows(self, run_id: str) -> list[tuple[Any, ...]]:
        """``checks`` as plain rows (CheckRow's fields)."""
        sql = (
            "SELECT t.id, t.cell_id, t.repetition, k.name, k.status, k.detail FROM checks k"
            " JOIN trials t ON t.id = k.trial_id WHERE t.run_id=?"
        )
        return self.db.execute(sql, (run_id,)).fetchall()

    def raw_outputs(self, run_id: str, without_log: str | None = None) -> list[tuple[str, int, str]]:
        """(cell_id, trial_id, the tool's raw output) of every successful trial (``without_log``: that kept no
        log of this name)."""
        sql = "SELECT cell_id, id, raw_output FROM trials WHERE run_id=? AND status='ok'"
        if without_log is not None:
            sql += " AND id NOT IN (SELECT trial_id FROM logs WHERE name=?)"
        rows = self.db.execute(sql + " ORDER BY id", (run_id, *([without_log] if without_log else [])))
        return [(c, i, raw) for c, i, raw in rows.fetchall()]

    def logs(self, run_id: str, name: str) -> list[tuple[str, int, str]]:
        """(cell_id, trial_id, the log's text) of every successful trial that kept a log of this name."""
        rows = self.db.execute(
            "SELECT t.cell_id, t.id, l.text FROM logs l JOIN trials t ON t.id = l.trial_id"
            " WHERE t.run_id=? AND t.status='ok' AND l.name=? ORDER BY t.id",
            (run_id, name),
        )
        return [(c, i, text) for c, i, text in rows.fetchall()]

    def monitor_frame(self, run_id: str) -> pd.DataFrame:
        """Every monitor point of the run's successful trials, by cell, repetition and order recorded: cell_id,
        trial_id, t, series, value, unit. Text columns are categoricals (store/columns.py): pandas' reading of
        a big run's 2.7M points as texts was 6 s of its first `show`."""
        ok = "FROM trials t WHERE t.run_id=? AND t.status='ok'"
        with self.db.snapshot():  # one read transaction, as samples_frame
            kinds, numbered = self._kinds(run_id, "monitor", ("series", "unit"))
            trial_rows = self.db.execute(f"SELECT t.id, t.cell_id {ok}", (run_id,)).fetchall()
            rows = self.db.execute(
                "SELECT m.trial_id, m.t, m.value, k.rowid FROM trials t JOIN monitor m ON m.trial_id = t.id"
                f" JOIN {numbered} k ON k.series = m.series AND k.unit = m.unit"
                " WHERE t.run_id=? AND t.status='ok' ORDER BY t.cell_id, t.repetition, m.rowid",
                (run_id,),
            ).fetchall()
        from layerbench.store import columns

        return columns.monitor(kinds, trial_rows, rows)

    def trial_infos(self, run_id: str) -> dict[int, dict[str, Any]]:
        """What each trial recorded of its conditions (target, devices, servers, limits)."""
        rows = self.db.execute("SELECT id, info_json FROM trials WHERE run_id=?", (run_id,)).fetchall()
        return {int(r[0]): json.loads(r[1]) for r in rows}

    def trial_info_texts(self, run_id: str) -> dict[int, str]:
        """``trial_infos`` as stored (JSON), for a reader that decodes only what it reads."""
        rows = self.db.execute("SELECT id, info_json FROM trials WHERE run_id=?", (run_id,)).fetchall()
        return {int(r[0]): r[1] for r in rows}

    def profiles(self, run_id: str) -> dict[int, ProfileRecord]:
        """Every profiled trial's profile, by trial id (read only by explanations: they are large)."""
        sql = (
            "SELECT p.trial_id, p.kind, p.folded, p.counters_json, p.detail FROM profiles p"
            " JOIN trials t ON t.id = p.trial_id WHERE t.run_id=?"
        )
        out: dict[int, ProfileRecord] = {}
        for tid, kind, folded, counters, detail in self.db.execute(sql, (run_id,)).fetchall():
            stacks = dict(line.rsplit(" ", 1) for line in folded.splitlines() if line)
            out[int(tid)] = ProfileRecord(kind, {k: int(v) for k, v in stacks.items()}, json.loads(counters), detail)
        return out

    def samples_frame(self, run_id: str) -> pd.DataFrame:
        """One row per sample of the run's successful trials, by cell, repetition and order recorded: run_id,
        cell_id, label, stack_label, workload, is_baseline, baseline_cell_id, trial_id, repetition, metric,
        value, unit, direction, job. Text columns are categoricals (store/columns.py)."""
        trials = "FROM trials t JOIN cells c ON c.run_id = t.run_id AND c.cell_id = t.cell_id"
        ok = "WHERE t.run_id=? AND t.status='ok'"
        with self.db.snapshot():  # one read transaction: a trial committed meanwhile is in every part or in none
            kinds, numbered = self._kinds(run_id, "samples", ("metric", "unit", "direction", "job"))
            cell_rows = self.db.execute(
                "SELECT cell_id, label, stack_label, workload, baseline_cell_id, is_baseline FROM cells WHERE run_id=?",
                (run_id,),
            ).fetchall()
            trial_rows = self.db.execute(f"SELECT t.id, t.cell_id, t.repetition {trials} {ok}", (run_id,)).fetchall()
            rows = self.db.execute(
                f"SELECT s.trial_id, s.value, k.rowid {trials} JOIN samples s ON s.trial_id = t.id"
                f" JOIN {numbered} k"
                " ON k.metric = s.metric AND k.unit = s.unit AND k.direction = s.direction AND k.job = s.job"
                f" {ok} ORDER BY t.cell_id, t.repetition, s.rowid",
                (run_id,),
            ).fetchall()
        from layerbench.store import columns

        return columns.samples(run_id, kinds, cell_rows, trial_rows, rows)

    def _kinds(self, run_id: str, table: str, names: tuple[str, ...]) -> tuple[list[tuple[Any, ...]], str]:
        """The distinct ``names`` of ``table``'s rows (samples or monitor) of the run's successful trials,
        numbered in the temporary table ``{table}_kinds`` (its rowid, then ``names``), so that the rows read back
        as numbers: a few dozen texts instead of several on each of a million rows. That table's name too."""
        kinds, fields = self.db.kinds_table(table, names), ", ".join(names)
        self.db.execute(
            f"INSERT INTO {kinds} ({fields}) SELECT DISTINCT {', '.join(f'x.{n}' for n in names)}"
            f" FROM {table} x JOIN trials t ON t.id = x.trial_id WHERE t.run_id=? AND t.status='ok'",
            (run_id,),
        )
        return self.db.execute(f"SELECT rowid, {fields} FROM {kinds}").fetchall(), kinds

    # -- what store/cache.py and the report's preparation ask ------------------

    def run_state(self, run_id: str) -> tuple[str, float, int, int, int] | None:
        """The run's status, start, cells and trials counted and its last trial's id; None for no such run."""
        with self.db.snapshot():
            status = self.db.execute("SELECT status, started_at FROM runs WHERE id=?", (run_id,)).fetchone()
            if status is None:
                return None
            cells = self.db.execute("SELECT count(*) FROM cells WHERE run_id=?", (run_id,)).fetchone()[0]
            trials, last = self.db.execute("SELECT count(*), max(id) FROM trials WHERE run_id=?", (run_id,)).fetchone()
        return str(status[0]), float(status[1]), int(cells), int(trials), int(last or 0)

    def sample_count(self, run_id: str) -> int:
        sql = "SELECT count(*) FROM samples s JOIN trials t ON s.trial_id = t.id WHERE t.run_id=?"
        return int(self.db.execute(sql, (run_id,)).fetchone()[0])


def _run_row(r: tuple[Any, ...]) -> RunRow:
    return RunRow(*r[:5], json.loads(r[5]), r[6], json.loads(r[7]), r[8])


def _init(conn: sqlite3.Connection, path: Path) -> None:
    conn.execute("PRAGMA journal_mode=WAL")
    migrate(conn, path)


def _use_wal(conn: sqlite3.Connection) -> None:
    """WAL lets `show` read while a run writes. Switching to it needs an
    exclusive lock, and SQLite answers "locked" at once instead of waiting
    where waiting could deadlock (two processes creating the same new file),
    so the busy timeout does not cover it: retry until it would have.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def migrate(conn: sqlite3.Connection, path: Path) -> None:
    """Upgrade an older database one version at a time; refuse a newer one.

    Each step and its version bump are one transaction, so a failed step
    leaves the database at the version before it, never half-upgraded.
    """
    while (version := schema_version(conn, path)) < VERSION:
        _step(conn, version)


def schema_version(conn: sqlite3.Connection, path: Path) -> int:
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version > VERSION:
        raise StoreError(
            f"{path} has schema version {version}, newer than this layerbench knows ({VERSION})",
            hint="upgrade layerbench, or use another --db",
        )
    return version


def _step(conn: sqlite3.Connection, version: int) -> None:
    # IMMEDIATE takes the write lock first: of two processes opening a new
    # database at once, one migrates and the other waits, then sees it done.
    conn.execute("BEGIN IMMEDIATE")
    try:
        if conn.execute("PRAGMA user_version").fetchone()[0] == version:
            for statement in statements(MIGRATIONS[version]):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version={version + 1}")
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
