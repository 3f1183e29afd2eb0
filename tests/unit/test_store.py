from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from layerbench.errors import StoreError
from layerbench.sample import Sample
from layerbench.store.db import CellRow, CheckRecord, Store, TrialRecord
from layerbench.store.schema import VERSION


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
        info={"k": 1},
        samples=samples,
        checks=[CheckRecord("noisy", "skip", "one trial")],
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


def test_resolve_run(tmp_path: Path) -> None:
    store, first = new_store(tmp_path)
    time.sleep(0.01)
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
