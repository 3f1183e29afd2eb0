from __future__ import annotations

import shutil
import sqlite3
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from layerbench.errors import StoreError
from layerbench.records.checks import Check
from layerbench.records.info import TrialInfo
from layerbench.records.sample import Sample
from layerbench.records.trial import TrialRecord
from layerbench.store import db
from layerbench.store.db import CellRow, Store
from layerbench.store.schema import MIGRATIONS, VERSION, statements

DATA = Path(__file__).parent.parent / "data"


def trial(cell: str, rep: int, status: str = "ok", value: float = 1000.0) -> TrialRecord:
    now = time.time()
    samples = [Sample("iops", value, "IO/s", "read", "RR")] if status == "ok" else []
    return TrialRecord(
        cell_id=cell,
        repetition=rep,
        status=status,
        category=None if status == "ok" else "tool-error",
        started_at=now,
        ended_at=now + 1,
        argv=["fio", "--name=RR"],
        raw_output="{}",
        stderr="" if status == "ok" else "fio: io_u error: Invalid argument",
        info=TrialInfo(extra={"k": 1}),
        samples=samples,
        checks=[Check("noisy", "skip", "one trial")],
    )


def new_store(tmp_path: Path) -> tuple[Store, str]:
    store = Store.open(tmp_path / "r.db")
    run_id = store.new_run("t", "{}", "digest", {"kernel": "6.18"})
    cells = [
        CellRow("a", "A · RR", "A", "RR", '{"workload": {"rw": "randread"}}', True, "a"),
        CellRow("b", "B · RR", "B", "RR", '{"workload": {"rw": "randread"}}', False, "a"),
    ]
    store.add_cells(run_id, cells)
    return store, run_id


def test_trials_round_trip_and_failed_trials_keep_stderr(tmp_path: Path) -> None:
    store, run_id = new_store(tmp_path)
    store.record_trial(run_id, trial("a", 0))
    store.record_trial(run_id, trial("b", 0, status="failed"))
    store.close()
    again = Store.open(tmp_path / "r.db")
    assert again.done_trials(run_id) == {("a", 0), ("b", 0)}
    failed = [t for t in again.trials(run_id) if t.status == "failed"]
    assert failed[0].category == "tool-error" and "Invalid argument" in failed[0].stderr
    frame = again.samples_frame(run_id)
    assert list(frame["cell_id"]) == ["a"] and list(frame["value"]) == [1000.0]
    assert len(again.checks(run_id)) == 2


def test_a_finished_trial_is_never_recorded_twice(tmp_path: Path) -> None:
    store, run_id = new_store(tmp_path)
    store.record_trial(run_id, trial("a", 0))
    with pytest.raises(sqlite3.IntegrityError):
        store.record_trial(run_id, trial("a", 0))
    assert len(store.samples_frame(run_id)) == 1  # the failed insert left nothing behind


def test_samples_read_back_by_cell_and_repetition_with_their_cells_columns(tmp_path: Path) -> None:
    store, run_id = new_store(tmp_path)
    store.record_trial(run_id, trial("b", 1, value=3.0))
    store.record_trial(run_id, trial("a", 0, value=1.0))
    store.record_trial(run_id, trial("b", 0, value=2.0))
    store.record_trial(run_id, trial("a", 1, status="failed"))
    other = store.new_run("t", "{}", "digest", {})
    store.add_cells(other, [CellRow("a", "A · RR", "A", "RR", "{}", True, None)])
    store.record_trial(
        other, TrialRecord("a", 0, "ok", None, 0, 1, [], "", "", TrialInfo(), [Sample("bw", 5.0, "B/s", "", "")])
    )
    frame = store.samples_frame(run_id)
    assert frame["value"].tolist() == [1.0, 2.0, 3.0]  # cell a, then b's repetitions 0 and 1; no failed trial
    assert frame["label"].tolist() == ["A · RR", "B · RR", "B · RR"] and frame["is_baseline"].tolist() == [1, 0, 0]
    assert frame["repetition"].tolist() == [0, 0, 1] and set(frame["run_id"]) == {run_id}
    assert list(frame["metric"].cat.categories) == ["iops"]  # the other run's metrics are not this run's
    lone = store.samples_frame(other)
    assert lone["metric"].tolist() == ["bw"] and lone["baseline_cell_id"].isna().all()


def test_resolve_run(tmp_path: Path) -> None:
    store, first = new_store(tmp_path)
    deadline = time.monotonic() + 60
    while time.time() <= store.run(first).started_at:  # the clock past the first run's start, even if it stepped back
        assert time.monotonic() < deadline, "the wall clock stayed behind the first run's start for a minute"
        time.sleep(0.001)
    second = store.new_run("t2", "{}", "d", {})
    assert store.resolve_run("latest") == second
    assert store.resolve_run(first) == first
    with pytest.raises(StoreError, match="matches no run") as err:
        store.resolve_run("nope")
    assert second in (err.value.hint or "")


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    Store.open(tmp_path / "r.db").close()
    with sqlite3.connect(tmp_path / "r.db") as conn:
        conn.execute(f"PRAGMA user_version={VERSION + 1}")
    with pytest.raises(StoreError, match="newer than this layerbench knows"):
        Store.open(tmp_path / "r.db")


def test_missing_database_for_reading(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no results database"):
        Store.open(tmp_path / "absent.db", create=False)


def test_resolve_run_by_prefix_and_refuses_an_ambiguous_one(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "r.db")
    with store.conn:
        for i, run_id in enumerate(["20261122-231501-aa12", "20261122-231501-ab34"]):
            store.conn.execute("INSERT INTO runs VALUES (?,?,?,NULL,'finished','{}','d','{}',1)", (run_id, "t", i))
    assert store.resolve_run("20261122-231501-aa") == "20261122-231501-aa12"
    assert store.resolve_run("20261122-231501-ab34") == "20261122-231501-ab34"
    assert store.resolve_run("latest") == "20261122-231501-ab34"
    with pytest.raises(StoreError, match="matches several runs") as err:
        store.resolve_run("20261122-231501-a")
    assert "20261122-231501-aa12" in (err.value.hint or "")


def test_a_failed_migration_step_leaves_the_old_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    Store.open(tmp_path / "r.db").close()
    broken = "ALTER TABLE runs ADD COLUMN note TEXT; CREATE TABLE runs (id TEXT);"
    monkeypatch.setattr(db, "MIGRATIONS", [*db.MIGRATIONS, broken])
    monkeypatch.setattr(db, "VERSION", VERSION + 1)
    with pytest.raises(StoreError, match="already exists"):
        Store.open(tmp_path / "r.db")
    with sqlite3.connect(tmp_path / "r.db") as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == VERSION
        columns = [row[1] for row in conn.execute("PRAGMA table_info(runs)")]
    assert "note" not in columns  # the step's first statement was rolled back with it


def test_an_older_database_is_upgraded_step_by_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store, run_id = new_store(tmp_path)
    store.record_trial(run_id, trial("a", 0))
    store.close()
    steps = ["ALTER TABLE runs ADD COLUMN note TEXT", "UPDATE runs SET note = 'upgraded; twice'"]
    monkeypatch.setattr(db, "MIGRATIONS", [*db.MIGRATIONS, *steps])
    monkeypatch.setattr(db, "VERSION", VERSION + 2)
    again = Store.open(tmp_path / "r.db")
    assert again.conn.execute("PRAGMA user_version").fetchone()[0] == VERSION + 2
    assert again.conn.execute("SELECT note FROM runs").fetchone()[0] == "upgraded; twice"
    assert again.done_trials(run_id) == {("a", 0)}


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    (tmp_path / "r.db").write_text("not sqlite at all, " * 100)
    with pytest.raises(StoreError, match="cannot open results database"):
        Store.open(tmp_path / "r.db")


def test_migration_scripts_split_into_whole_statements() -> None:
    script = "CREATE TABLE t (x TEXT DEFAULT 'a;b');\nCREATE INDEX i ON t(x);\n"
    assert statements(script) == ["CREATE TABLE t (x TEXT DEFAULT 'a;b');", "CREATE INDEX i ON t(x);"]
    assert len(statements(MIGRATIONS[0])) == MIGRATIONS[0].count("CREATE ")
    with pytest.raises(ValueError, match="ends inside a statement"):
        statements("CREATE TABLE t (x TEXT DEFAULT 'a;b)")


def open_and_start_a_run(path: Path) -> str:
    store = Store.open(path)
    try:
        return store.new_run("concurrent", "{}", "d", {})
    finally:
        store.close()


def test_processes_creating_one_database_at_once_all_succeed(tmp_path: Path) -> None:
    # Switching a new file to WAL and migrating it race; SQLite answers "locked" at once there.
    with ProcessPoolExecutor(6) as pool:
        run_ids = list(pool.map(open_and_start_a_run, [tmp_path / "r.db"] * 6))
    store = Store.open(tmp_path / "r.db")
    assert {r.id for r in store.runs()} == set(run_ids)
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_profile_is_kept_with_its_trial_and_read_only_when_asked(tmp_path: Path) -> None:
    from dataclasses import replace

    from layerbench.records.trial import ProfileRecord

    store, run_id = new_store(tmp_path)
    folded = {"fio;entry_SYSCALL_64_[k];__seccomp_filter_[k]": 3, "C++ a<b>;x y": 2}  # frames hold spaces
    profile = ProfileRecord("cpu", folded, {"raw_syscalls:sys_enter": 5e5, "seconds": 6.1}, "")
    store.record_trial(run_id, replace(trial("a", 0), profile=profile))
    store.record_trial(run_id, trial("a", 1))
    again = Store.open(tmp_path / "r.db")
    (only,) = again.profiles(run_id).values()
    assert only == profile
    assert {c for c, _, _ in again.raw_outputs(run_id)} == {"a"}  # the trial itself is whole


def test_a_reader_leaves_a_rollback_mode_database_as_it_found_it(tmp_path: Path) -> None:
    """tests/data/quick/run.db is committed in rollback mode: reading it once switched it to WAL, so git
    saw it changed. A reader keeps the file; a writer (a resume) still puts it in WAL for `show`."""
    path = tmp_path / "r.db"
    shutil.copy(DATA / "quick" / "run.db", path)
    before = path.read_bytes()
    reader = Store.open(path, create=False)
    assert reader.runs() and reader.conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    reader.close()
    assert path.read_bytes() == before
    writer = Store.open(path, create=False, writes=True)
    assert writer.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    writer.close()
