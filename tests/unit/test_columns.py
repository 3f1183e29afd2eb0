"""The samples and monitor frames' columns built from codes: the same texts, stored once."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from layerbench.records.info import TrialInfo
from layerbench.records.trial import MonitorPoint, TrialRecord
from layerbench.store.columns import categorical, positions
from layerbench.store.db import Store

REAL_RUN = Path(__file__).resolve().parent.parent / "data" / "plan" / "scaling.db"  # database cells' series


def test_a_categorical_repeats_each_text_where_its_rows_point() -> None:
    column = categorical(["b", None, "a"], np.array([0, 2, 1, 0]))
    assert column.tolist()[:2] == ["b", "a"] and pd.isna(column[2]) and column[3] == "b"
    assert list(column.categories) == ["a", "b"]  # sorted: the column sorts as its texts do


def test_a_categorical_writes_the_same_csv_as_its_texts() -> None:
    texts = ["x · RR", None, "y"]
    column = categorical(texts, np.array([0, 1, 2]))
    frame = pd.DataFrame({"label": column, "n": [1, 2, 3]})
    plain = pd.DataFrame({"label": texts, "n": [1, 2, 3]})
    assert frame.to_csv(index=False) == plain.to_csv(index=False)


def test_positions_finds_each_key_in_an_unsorted_table() -> None:
    assert positions(np.array([30, 10, 20]), np.array([10, 10, 30, 20])).tolist() == [1, 1, 0, 2]
    assert positions(np.array(["b", "a"]), np.array(["a", "b"])).tolist() == [1, 0]


def test_positions_refuses_a_key_the_table_lacks() -> None:
    with pytest.raises(ValueError, match="missing"):
        positions(np.array([10, 20]), np.array([15]))
    with pytest.raises(ValueError, match="missing"):
        positions(np.array([10, 20]), np.array([25]))  # past the end: searchsorted points beyond the table


def test_the_monitor_frame_holds_the_database_s_points_as_codes(tmp_path: Path) -> None:
    shutil.copy(REAL_RUN, tmp_path / "r.db")
    store = Store.open(tmp_path / "r.db", create=False)
    run_id = store.resolve_run("latest")
    cell = store.conn.execute("SELECT cell_id FROM trials WHERE run_id=?", (run_id,)).fetchone()[0]
    failed = TrialRecord(
        cell, 99, "failed", "tool", 0.0, 1.0, [], "", "", TrialInfo(), [], [], [MonitorPoint(1, "x", 2, "%")]
    )
    store.record_trial(run_id, failed)  # a failed trial's points are not the run's
    plain = pd.read_sql_query(
        "SELECT t.cell_id, t.id AS trial_id, m.t, m.series, m.value, m.unit FROM trials t"
        " JOIN monitor m ON m.trial_id = t.id WHERE t.run_id=? AND t.status='ok'"
        " ORDER BY t.cell_id, t.repetition, m.rowid",
        store.conn,
        params=(run_id,),
    )
    frame = store.monitor_frame(run_id)
    assert len(frame) > 500 and frame["series"].nunique() > 5
    assert all(isinstance(frame[c].dtype, pd.CategoricalDtype) for c in ("cell_id", "series", "unit"))
    pd.testing.assert_frame_equal(frame.astype({c: plain[c].dtype for c in ("cell_id", "series", "unit")}), plain)


def test_a_run_without_monitor_points_has_an_empty_frame_with_its_columns(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "r.db")
    run_id = store.new_run("empty", "{}", "d", {})
    assert list(store.monitor_frame(run_id).columns) == ["cell_id", "trial_id", "t", "series", "value", "unit"]
