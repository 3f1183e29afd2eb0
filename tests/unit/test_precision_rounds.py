"""The precision mode's stopping rule, on a real store: a steady cell stops, a noisy one goes on."""

from __future__ import annotations

import time
from pathlib import Path

from layerbench.analysis.stopping import still_imprecise
from layerbench.records.info import TrialInfo
from layerbench.records.sample import Sample
from layerbench.records.trial import TrialRecord
from layerbench.spec import load
from layerbench.spec.matrix import expand_stacks
from layerbench.spec.models import Cell
from layerbench.store.db import CellRow, Store

SPEC = """
name: p
stacks: [{filesystem: none}]
workloads: [{name: STEADY, rw: randread}, {name: NOISY, rw: randread}]
trials: {repetitions: 10, precision: 0.03, min_repetitions: 3}
"""


def test_steady_cells_stop_and_noisy_ones_go_on(tmp_path: Path) -> None:
    exp = load.parse(SPEC)
    stack = expand_stacks(exp)[0]
    steady, noisy = (Cell(stack=stack, workload=w) for w in exp.workloads)
    store = Store.open(tmp_path / "r.db")
    run_id = store.new_run("p", exp.model_dump_json(), exp.digest(), {})
    store.add_cells(
        run_id,
        [
            CellRow(c.id, c.label(), stack.label(), c.workload.name, c.model_dump_json(), False, None)
            for c in (steady, noisy)
        ],
    )
    values = {steady.id: [1000, 1002, 998], noisy.id: [1000, 1400, 700]}
    for cell_id, series in values.items():
        for rep, v in enumerate(series):
            samples = [Sample("iops", float(v), "IO/s", "read", "RR")]
            store.record_trial(
                run_id,
                TrialRecord(cell_id, rep, "ok", None, time.time(), time.time(), [], "", "", TrialInfo(), samples),
            )
    assert still_imprecise(exp, [steady, noisy], store.samples_frame(run_id)) == [noisy]


def test_each_cell_is_judged_on_its_own_headline(tmp_path: Path) -> None:
    """A database cell has ops/s, not IOPS: it must be able to stop too."""
    exp = load.parse(
        "name: p\nstacks: [{filesystem: none}, {filesystem: xfs, server: redis}]\n"
        "workloads: [{name: RR, rw: randread}, {kind: ycsb, name: A}]\n"
        "trials: {repetitions: 10, precision: 0.03, min_repetitions: 3}\n"
    )
    (fio_stack, db_stack), (fio_w, db_w) = expand_stacks(exp), exp.workloads
    fio_cell, db_cell = Cell(stack=fio_stack, workload=fio_w), Cell(stack=db_stack, workload=db_w)
    store = Store.open(tmp_path / "r.db")
    run_id = store.new_run("p", exp.model_dump_json(), exp.digest(), {})
    rows = [CellRow(c.id, c.label(), c.stack.label(), c.workload.name, c.model_dump_json(), False, None)
            for c in (fio_cell, db_cell)]  # fmt: skip
    store.add_cells(run_id, rows)
    for rep in range(3):
        for cell, sample in ((fio_cell, Sample("iops", 1000.0, "IO/s", "read", "RR")),
                             (db_cell, Sample("ops", 5000.0 + rep, "ops/s", "", "i0"))):  # fmt: skip
            record = TrialRecord(cell.id, rep, "ok", None, time.time(), time.time(), [], "", "", TrialInfo(), [sample])
            store.record_trial(run_id, record)
    assert still_imprecise(exp, [fio_cell, db_cell], store.samples_frame(run_id)) == []
