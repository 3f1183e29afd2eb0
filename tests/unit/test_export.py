"""Exports round-trip: what is read back from CSV, JSON and Parquet equals the store."""

from __future__ import annotations

import io
import pickle
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import layerbench
from layerbench.records.info import TrialInfo
from layerbench.records.trial import TrialRecord
from layerbench.report import csv_lines
from layerbench.report.export import (
    cell_config,
    parquet_bytes,
    parquet_table,
    samples_with_config,
    write,
    write_samples,
)
from layerbench.spec.models import Cell, FioWorkload, StackSpec
from layerbench.store.db import CellRow, Store
from layerbench.store.read import load
from layerbench.store.read import samples as read_samples
from layerbench.workloads import fio

DATA = Path(__file__).parent.parent / "data" / "fio" / "3.33"


def store_with_real_samples(path: Path) -> tuple[Store, str]:
    store = Store.open(path)
    run_id = store.new_run("t", "{}", "d", {"kernel": "6.18"})
    stack = StackSpec.model_validate(
        {"device": {"kind": "loop"}, "filesystem": "xfs", "engine": "native", "placement": "host-dir"}
    )
    cell = Cell(stack=stack, workload=FioWorkload(name="RR", rw="randread"))
    store.add_cells(
        run_id, [CellRow(cell.id, cell.label(), stack.label(), "RR", cell.model_dump_json(), True, cell.id)]
    )
    for rep, name in enumerate(["native-randread-4k-32x32.json", "container-volume-randread-4k-32x32.json"]):
        text = (DATA / name).read_text()
        samples = fio.samples(fio.parse(text))
        store.record_trial(
            run_id,
            TrialRecord(cell.id, rep, "ok", None, time.time(), time.time(), ["fio"], text, "", TrialInfo(), samples),
        )
    return store, run_id


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_export_round_trips(tmp_path: Path, fmt: str) -> None:
    store, run_id = store_with_real_samples(tmp_path / "r.db")
    data = load(store, run_id)
    table = samples_with_config(data.samples, data.cells)
    path = write(table, fmt, tmp_path / f"out.{fmt}")
    back = {"csv": pd.read_csv, "json": pd.read_json, "parquet": pd.read_parquet}[fmt](path)
    assert len(back) == len(table) > 20
    assert back["value"].tolist() == pytest.approx(table["value"].tolist(), rel=1e-12)
    assert set(back["stack.filesystem.type"]) == {"xfs"}
    assert back["metric"].tolist() == table["metric"].tolist()


def test_python_api_gives_the_same_numbers(tmp_path: Path) -> None:
    store, _ = store_with_real_samples(tmp_path / "r.db")
    store.close()
    frame = layerbench.open(tmp_path / "r.db").samples()
    iops = frame[(frame["metric"] == "iops")]["value"].tolist()
    expected = [
        fio.parse((DATA / n).read_text()).jobs[0].directions["read"].iops
        for n in ["native-randread-4k-32x32.json", "container-volume-randread-4k-32x32.json"]
    ]
    assert sorted(iops) == sorted(expected)
    assert "workload.bs" in frame.columns


def test_python_api_summary_and_ratios(tmp_path: Path) -> None:
    store, _ = store_with_real_samples(tmp_path / "r.db")
    store.close()
    results = layerbench.open(tmp_path / "r.db")
    summary = results.summary(metrics=("iops",))
    row = summary[(summary["metric"] == "iops") & (summary["direction"] == "read")].iloc[0]
    expected = [
        fio.parse((DATA / n).read_text()).jobs[0].directions["read"].iops
        for n in ["native-randread-4k-32x32.json", "container-volume-randread-4k-32x32.json"]
    ]
    assert row["n"] == 2 and row["mean"] == pytest.approx(sum(expected) / 2)
    ratio_row = results.ratios(metric="iops", direction="read").iloc[0]
    assert ratio_row["ratio"] == pytest.approx(1.0)  # the only cell is its own baseline


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_export_without_a_file_writes_standard_output(tmp_path: Path, fmt: str) -> None:
    store, run_id = store_with_real_samples(tmp_path / "r.db")
    store.close()
    done = subprocess.run(
        [sys.executable, "-m", "layerbench.cli", "export", run_id, "--db", str(tmp_path / "r.db"), "--format", fmt],
        capture_output=True,
        cwd=tmp_path,
        check=True,
        timeout=60,
    )
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("r.db")) == []  # no file dropped here
    read = {"csv": pd.read_csv, "json": pd.read_json, "parquet": pd.read_parquet}[fmt]
    back = read(io.BytesIO(done.stdout))
    assert len(back) > 20 and set(back["stack.filesystem.type"]) == {"xfs"}
    assert b"to standard output" in done.stderr


TESTS_DATA = Path(__file__).resolve().parent.parent / "data"
REAL_RUNS = [TESTS_DATA / "quick" / "run.db", TESTS_DATA / "plan" / "scaling.db"]


@pytest.mark.parametrize("real", REAL_RUNS, ids=lambda p: p.parent.name)
def test_csv_and_parquet_of_a_real_run_are_what_pandas_writes_of_the_merged_frame(tmp_path: Path, real: Path) -> None:
    """write_samples joins CSV rows and builds Parquet's table in Arrow (report/csv_lines.py, parquet_table):
    the same bytes as pandas' to_csv and to_parquet of samples_with_config."""
    db = tmp_path / real.name
    shutil.copy(real, db)
    cells, frame = read_samples(Store.open(db, create=False), "latest")
    merged = samples_with_config(frame, cells)
    for fmt in ("csv", "parquet"):
        write_samples(frame, cell_config(cells), fmt, tmp_path / f"fast.{fmt}")
        write(merged, fmt, tmp_path / f"pandas.{fmt}")
        assert (tmp_path / f"fast.{fmt}").read_bytes() == (tmp_path / f"pandas.{fmt}").read_bytes(), fmt
    assert parquet_table(frame, cell_config(cells)) is not None  # the fast path was taken
    # As `export` writes them again, from what the run's cache keeps (pickled): the same bytes.
    kept = pickle.loads(
        pickle.dumps((csv_lines.parts(frame, cell_config(cells)), parquet_bytes(frame, cell_config(cells))))
    )
    for fmt in ("csv", "parquet"):
        write_samples(frame.iloc[:0], cell_config(cells), fmt, tmp_path / f"kept.{fmt}", *kept)
        assert (tmp_path / f"kept.{fmt}").read_bytes() == (tmp_path / f"pandas.{fmt}").read_bytes(), fmt
