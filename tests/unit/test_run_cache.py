"""The columnar cache beside a results database (store/cache.py): the same run as the database gives,
rebuilt when trials are added, never used for a run still running, and no error where it cannot be written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from layerbench.analysis.latency import merged_percentiles
from layerbench.records.checks import Check
from layerbench.records.info import TrialInfo
from layerbench.records.percentiles import STANDARD, merge, percentiles
from layerbench.records.trial import MonitorPoint, TrialRecord
from layerbench.store import cache, read
from layerbench.store.db import CellRow, Store
from layerbench.store.read import RunData, StoredTrial, load
from layerbench.workloads import fio

DATA = Path(__file__).resolve().parent.parent / "data"
REAL_RUN = DATA / "plan" / "scaling.db"  # a real run: database cells, monitor series, checks
FIO_OUTPUTS = [
    DATA / "fio" / "3.33" / "native-randread-4k-32x32.json",
    DATA / "fio" / "3.33" / "container-volume-randread-4k-32x32.json",
]


def cached_parts(db: Path) -> list[str]:
    return sorted(p.name.split("-", 1)[0] for p in (db.parent / f"{db.name}-cache").glob("*/*.arrow"))


def assert_same_run(a: RunData, b: RunData) -> None:
    pd.testing.assert_frame_equal(a.samples, b.samples)
    pd.testing.assert_frame_equal(a.monitor, b.monitor)
    assert (a.cells, a.checks) == (b.cells, b.checks)

    def fields(t: StoredTrial) -> tuple[object, ...]:
        latency = {op: h.get_total_count() for op, h in t.client_latency.items()}
        return (t.id, t.cell_id, t.repetition, t.status, t.category, t.stderr, t.info, latency)

    assert [fields(t) for t in a.trials] == [fields(t) for t in b.trials]
    assert any(t.client_latency for t in b.trials)  # the database clients' histograms came through


def test_a_real_run_reads_the_same_from_the_cache_as_from_the_database(tmp_path: Path) -> None:
    db = tmp_path / "scaling.db"
    shutil.copy(REAL_RUN, db)
    store = Store.open(db, create=False)
    uncached = load(store, "latest")  # builds the cache
    assert cached_parts(db) == ["checks", "monitor", "samples", "trials"]
    again = load(store, "latest")  # reads it
    assert_same_run(uncached, again)
    assert not again.samples.empty and not again.monitor.empty
    shutil.rmtree(tmp_path / "scaling.db-cache")
    assert_same_run(load(store, "latest"), again)


def fio_store(path: Path) -> tuple[Store, str]:
    store = Store.open(path)
    run_id = store.new_run("fio", "{}", "d", {})
    store.add_cells(run_id, [CellRow(f"c{i}", f"cell {i}", f"stack {i}", "RR", "{}", i == 0, None) for i in range(2)])
    return store, run_id


def fio_trial(cell: str, rep: int, output: Path, kept: bool = False) -> TrialRecord:
    """A fio trial as layerbench records it (``kept``: with its histograms beside its output, as trial.py keeps
    them since 2026-11-28; without: as before)."""
    raw = output.read_text()
    result = fio.parse(raw)
    monitor = [MonitorPoint(1.0, "cpu.user", 40.0 + rep, "%")]
    logs = {fio.BINS_LOG: fio.bins_text(fio.completion_bins(result))} if kept else {}
    checks = [Check("noisy", "pass", "")]
    return TrialRecord(
        cell, rep, "ok", None, 0.0, 1.0, [], raw, "", TrialInfo(), fio.samples(result), checks, monitor, None, logs
    )


def test_new_trials_of_a_resumed_run_replace_the_cache_and_a_running_run_is_never_cached(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    store, run_id = fio_store(db)
    store.record_trial(run_id, fio_trial("c0", 0, FIO_OUTPUTS[0]))
    store.finish_run(run_id, "interrupted")
    first = cache.frame(store, run_id, "samples", lambda: store.samples_frame(run_id))
    assert cached_parts(db) == ["samples"]
    store.mark(run_id, "running")  # resumed
    store.record_trial(run_id, fio_trial("c1", 0, FIO_OUTPUTS[1]))
    # While it runs, every read is the database's, and nothing is written.
    calls: list[int] = []
    live = cache.frame(store, run_id, "samples", lambda: calls.append(1) or store.samples_frame(run_id))
    assert calls == [1] and set(live["cell_id"]) == {"c0", "c1"}
    store.finish_run(run_id, "finished")
    after = cache.frame(store, run_id, "samples", lambda: store.samples_frame(run_id))
    assert set(after["cell_id"]) == {"c0", "c1"} and len(after) > len(first)
    pd.testing.assert_frame_equal(after, store.samples_frame(run_id))
    (only,) = (tmp_path / "r.db-cache" / run_id).glob("*.arrow")  # the stale file went
    assert "-t2-" in only.name
    calls.clear()
    cache.frame(store, run_id, "samples", lambda: calls.append(1) or store.samples_frame(run_id))
    assert calls == []  # current: read from the file


def test_fio_histograms_merge_per_cell_as_they_did_per_trial(tmp_path: Path) -> None:
    store, run_id = fio_store(tmp_path / "r.db")
    for rep, output in enumerate([*FIO_OUTPUTS, FIO_OUTPUTS[0]]):
        store.record_trial(run_id, fio_trial("c0", rep, output))
    store.record_trial(run_id, fio_trial("c1", 0, FIO_OUTPUTS[1]))
    store.finish_run(run_id, "finished")
    built = read._cached_completions(store, run_id)
    cached = read._cached_completions(store, run_id)
    assert [(c.cell_id, c.direction, c.trials) for c in built] == [("c0", "read", 3), ("c1", "read", 1)]
    for a, b in zip(built, cached, strict=True):
        assert (a.cell_id, a.direction, a.trials, a.bins) == (b.cell_id, b.direction, b.trials, b.bins)
    # The percentiles of the merged histogram, as the per-trial histograms merged at read time gave them.
    per_trial = [
        j.directions["read"].clat_bins for o in [*FIO_OUTPUTS, FIO_OUTPUTS[0]] for j in fio.parse(o.read_text()).jobs
    ]
    table = merged_percentiles(cached)
    row = table[table["cell_id"] == "c0"].iloc[0]
    assert {k: row[k] for k in percentiles(merge(per_trial), STANDARD)} == percentiles(merge(per_trial), STANDARD)
    assert row["completions"] == sum(merge(per_trial).values())


def test_a_directory_that_cannot_be_written_means_no_cache_not_an_error(tmp_path: Path) -> None:
    store, run_id = fio_store(tmp_path / "r.db")
    store.record_trial(run_id, fio_trial("c0", 0, FIO_OUTPUTS[0]))
    store.finish_run(run_id, "finished")
    (tmp_path / "r.db-cache").write_text("a file where the directory would go")
    frame = cache.frame(store, run_id, "samples", lambda: store.samples_frame(run_id))
    pd.testing.assert_frame_equal(frame, store.samples_frame(run_id))


def test_a_damaged_file_is_rebuilt(tmp_path: Path) -> None:
    store, run_id = fio_store(tmp_path / "r.db")
    store.record_trial(run_id, fio_trial("c0", 0, FIO_OUTPUTS[0]))
    store.finish_run(run_id, "finished")
    cache.frame(store, run_id, "samples", lambda: store.samples_frame(run_id))
    (path,) = (tmp_path / "r.db-cache" / run_id).glob("*.arrow")
    path.write_bytes(b"not arrow")
    frame = cache.frame(store, run_id, "samples", lambda: store.samples_frame(run_id))
    pd.testing.assert_frame_equal(frame, store.samples_frame(run_id))
    assert path.read_bytes() != b"not arrow"


@pytest.mark.parametrize("kept", [False, True], ids=["from-the-output", "kept-by-the-trial"])
def test_a_histogram_without_bins_reads_back_as_one(tmp_path: Path, kept: bool) -> None:
    """fio's plain JSON has no bins: the cell still has its row (no percentiles), cached or not."""
    store, run_id = fio_store(tmp_path / "r.db")
    plain = json.loads(FIO_OUTPUTS[0].read_text())
    for job in plain["jobs"]:
        for direction in ("read", "write", "trim"):
            job[direction]["clat_ns"].pop("bins", None)
    (tmp_path / "plain.json").write_text(json.dumps(plain))
    store.record_trial(run_id, fio_trial("c0", 0, tmp_path / "plain.json", kept))
    store.record_trial(run_id, fio_trial("c1", 0, FIO_OUTPUTS[1], kept))
    store.finish_run(run_id, "finished")
    built, cached = read._cached_completions(store, run_id), read._cached_completions(store, run_id)
    assert [(c.cell_id, len(c.ns)) for c in built] == [("c0", 0), ("c1", len(cached[1].ns))]
    for a, b in zip(built, cached, strict=True):
        assert (a.cell_id, a.direction, a.trials, a.bins) == (b.cell_id, b.direction, b.trials, b.bins)
    table = merged_percentiles(cached)
    assert table["completions"].tolist()[0] == 0 and len(table) == 2


def test_histograms_a_trial_kept_merge_as_its_output_did_and_its_output_is_not_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trial keeps its histograms (fio.BINS_LOG), so a first read need not parse its whole output (46 s of a
    million-sample run's `show --json`); a trial recorded before, without them, is read from its output as it
    was: the same merged histograms either way, and in a run of both (a run resumed by a newer layerbench)."""
    outputs = [*FIO_OUTPUTS, FIO_OUTPUTS[0]]

    def recorded(kept: list[bool], name: str, c1_kept: bool | None = None) -> tuple[Store, str]:
        store, run_id = fio_store(tmp_path / name)
        for rep, (output, keep) in enumerate(zip(outputs, kept, strict=True)):
            store.record_trial(run_id, fio_trial("c0", rep, output, keep))
        store.record_trial(run_id, fio_trial("c1", 0, FIO_OUTPUTS[1], kept[0] if c1_kept is None else c1_kept))
        store.finish_run(run_id, "finished")
        return store, run_id

    def merged(store: Store, run_id: str) -> list[tuple[object, ...]]:
        return [(c.cell_id, c.direction, c.trials, c.bins) for c in read._completions(store, run_id)]

    before = merged(*recorded([False, False, False], "before.db"))
    assert [b[:3] for b in before] == [("c0", "read", 3), ("c1", "read", 1)] and all(b[3] for b in before)
    assert merged(*recorded([True, False, True], "both.db")) == before
    assert merged(*recorded([False, False, False], "later.db", c1_kept=True)) == before  # in the trials' order
    kept = recorded([True, True, True], "kept.db")

    def no_parse(text: str) -> fio.FioResult:
        raise AssertionError("a trial that kept its histograms had its output parsed")

    monkeypatch.setattr(fio, "parse", no_parse)
    assert merged(*kept) == before
