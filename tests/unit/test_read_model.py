"""The read model: a run loaded once into typed cells (with their sweep points), trials and checks."""

from __future__ import annotations

import gc
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from layerbench.errors import StoreError
from layerbench.records import hdr
from layerbench.records.checks import Check
from layerbench.records.info import TrialInfo
from layerbench.records.trial import TrialRecord
from layerbench.run.loop import register_cells
from layerbench.spec import load as spec_load
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.matrix import expand, sweep_point, sweep_points
from layerbench.spec.models import FioWorkload
from layerbench.store.db import CellRow, Store, collector_paused
from layerbench.store.read import load, load_samples

SWEPT = """
name: surfaces
stacks:
  - {filesystem: xfs, engine: native}
workloads:
  - {name: read, rw: read, sweep: {size: [1M, 4M], bs: [4k, 1M]}}
  - {name: read-bs4k, rw: read}
"""


def test_a_swept_workload_knows_its_origin_and_point_from_its_fields(full_caps: HostCaps) -> None:
    exp = spec_load.parse(SWEPT, "surfaces")
    cells = expand(exp, full_caps).cells
    points = {c.workload.name: sweep_point(c.workload, sweep_points(exp.workloads)) for c in cells}
    assert points["read-size1M-bs4k"].origin == "read"
    assert points["read-size4M-bs1M"].values == {"size": 4 * 2**20, "bs": 2**20}
    # Named like a point but not one: a name is never parsed for what the fields say.
    assert points["read-bs4k"].origin == "read-bs4k" and points["read-bs4k"].values == {}


def test_a_run_loads_once_into_typed_cells_trials_and_checks(tmp_path: Path, full_caps: HostCaps) -> None:
    exp = spec_load.parse(SWEPT, "surfaces")
    matrix = expand(exp, full_caps)
    store = Store.open(tmp_path / "r.db")
    run_id = store.new_run(exp.name, exp.model_dump_json(), exp.digest(), {})
    register_cells(store, run_id, matrix)
    first = matrix.cells[0]
    latency = {"read": hdr.encode(hdr.of_values([100.0, 200.0]))}
    check = Check("noisy", "flag", "CV 14%")
    info = TrialInfo(latency_hdr=latency)
    store.record_trial(run_id, TrialRecord(first.id, 0, "ok", None, 1.0, 2.0, [], "", "", info, [], [check]))
    data = load(store, "latest")
    cell = next(c for c in data.cells if c.cell_id == first.id)
    assert cell.cell == first and cell.stack == first.stack
    assert cell.operation == "read" and set(cell.point.values) == {"size", "bs"}
    (trial,) = data.trials
    assert trial.client_latency["read"].get_total_count() == 2
    assert [(k.cell_id, k.name, k.status) for k in data.checks] == [(first.id, "noisy", "flag")]
    assert data.trials_rule == exp.trials and not data.per_filesystem
    assert data.completions is None  # fio's histograms only when asked for


def test_a_stored_job_file_need_not_exist_where_results_are_read(tmp_path: Path) -> None:
    job = tmp_path / "mine.fio"
    job.write_text("[mine]\nrw=read\n")
    config = {
        "stack": {"device": {"kind": "loop"}, "filesystem": "xfs", "engine": "native", "placement": "host-dir"},
        "workload": FioWorkload(name="mine", job_file=str(job)).model_dump(mode="json"),
    }
    job.unlink()
    store = Store.open(tmp_path / "r.db")
    run_id = store.new_run("t", "{}", "d", {})
    store.add_cells(run_id, [CellRow("c", "c", "s", "mine", json.dumps(config), True, "c")])
    (cell,) = load(store, run_id).cells
    assert cell.cell.workload.job_file == str(job)


def test_a_cell_this_version_cannot_read_is_a_store_error(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "r.db")
    run_id = store.new_run("t", "{}", "d", {})
    store.add_cells(run_id, [CellRow("c", "c", "s", "RR", '{"workload": {"rw": "randread"}}', True, "c")])
    store.record_trial(run_id, TrialRecord("c", 0, "ok", None, time.time(), time.time(), [], "", "", TrialInfo(), []))
    with pytest.raises(StoreError, match="not a cell this layerbench reads"):
        load(store, run_id)


def test_importing_layerbench_loads_no_pandas() -> None:
    code = "import sys, layerbench; assert 'pandas' not in sys.modules; assert callable(layerbench.open)"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_cli_loads_matplotlib_only_to_draw() -> None:
    code = "import sys, layerbench.cli.app; assert 'matplotlib' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_cycle_collector_pauses_while_a_run_is_read_and_comes_back_as_it_was() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause holds
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # a caller's own choice is kept
    finally:
        gc.enable()


def test_cells_share_their_equal_stacks_and_workloads(tmp_path: Path) -> None:
    """The quick run's 18 cells: three workloads on six stacks, each one object however many cells hold it (what
    a run's cells cache unpickles), and each cell still the one stored."""
    db = tmp_path / "run.db"
    shutil.copy(Path(__file__).resolve().parents[1] / "data" / "quick" / "run.db", db)
    store = Store.open(db, create=False)
    cells = load_samples(store, "latest").cells
    assert len({id(c.cell.stack) for c in cells}) == len({c.cell.stack for c in cells}) < len(cells)
    assert len({id(c.cell.workload) for c in cells}) == len({c.cell.workload for c in cells}) < len(cells)
    assert [c.cell.id for c in cells] == [c.cell_id for c in cells]  # its configuration, as stored
