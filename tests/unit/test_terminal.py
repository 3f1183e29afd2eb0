"""The `show` table and its JSON twin, rendered from results read back from a Store."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from rich.console import Console

from layerbench.records.checks import Check
from layerbench.records.info import TrialInfo
from layerbench.records.sample import Sample
from layerbench.records.trial import TrialRecord
from layerbench.report.terminal import plain, refused_table, results_table, show_json
from layerbench.report.view import RunView, view
from layerbench.spec.models import Cell, FioWorkload, StackSpec
from layerbench.store.db import CellRow, Store
from layerbench.store.read import load

RR = FioWorkload(name="RR", rw="randread", bs=4096)
SW = FioWorkload(name="SW", rw="write", bs=128 * 1024)


def cell(filesystem: str, engine: str, placement: str, workload: FioWorkload) -> Cell:
    stack = {"device": {"kind": "loop"}, "filesystem": filesystem, "engine": engine, "placement": placement}
    return Cell(stack=StackSpec.model_validate(stack), workload=workload)


def record(store: Store, run_id: str, c: Cell, rep: int, value: float | None) -> None:
    """``value`` None records a failed trial, with the tool's stderr and no samples."""
    now = time.time()
    metric, unit = ("iops", "IO/s") if c.workload.rw.startswith("rand") else ("bw", "B/s")
    direction = "read" if "read" in c.workload.rw else "write"
    samples = [] if value is None else [Sample(metric, value, unit, direction, c.workload.name)]
    status, category = ("ok", None) if value is not None else ("failed", "tool-error")
    stderr = "" if value is not None else "fio: pid=42, err=5/file:io_u.c:1889, func=io_u error, error=I/O error"
    trial = TrialRecord(c.id, rep, status, category, now, now + 1, ["fio"], "{}", stderr, TrialInfo(), samples)
    store.record_trial(run_id, trial)


def shown(tmp_path: Path) -> RunView:
    """Native xfs is the baseline; docker overlay2 halves RR; a volume fails every trial."""
    store = Store.open(tmp_path / "r.db")
    run_id = store.new_run("demo", '{"name": "demo"}', "d", {"kernel": "6.18"})
    base = {w.name: cell("xfs", "native", "host-dir", w) for w in (RR, SW)}
    layer = {w.name: cell("xfs", "docker:overlay2", "writable-layer", w) for w in (RR, SW)}
    volume = cell("xfs", "docker:overlay2", "volume", RR)
    pairs = [(base["RR"], base["RR"]), (base["SW"], base["SW"]), (layer["RR"], base["RR"])]
    pairs += [(layer["SW"], base["SW"]), (volume, base["RR"])]
    rows = [
        CellRow(c.id, c.label(), c.stack.label(), c.workload.name, c.model_dump_json(), c is b, b.id) for c, b in pairs
    ]
    store.add_cells(run_id, rows)
    for rep, jitter in enumerate([0.98, 1.0, 1.02]):
        record(store, run_id, base["RR"], rep, 48_200 * jitter)
        record(store, run_id, layer["RR"], rep, 24_100 * jitter)
        record(store, run_id, base["SW"], rep, 900 * 2**20 * jitter)
        record(store, run_id, volume, rep, None)
    record(store, run_id, layer["SW"], 0, 880 * 2**20)
    store.add_refused(run_id, "loop/xfs/docker:devicemapper/volume · RR", "{}", "devicemapper needs thin-pool tools")
    store.finish_run(run_id, "finished")
    shown = view(load(store, run_id))
    store.close()
    return shown


def render(table: object) -> str:
    console = Console(record=True, width=160)
    console.print(table)
    return console.export_text()


def test_results_table_shows_stacks_values_ratios_and_failures(tmp_path: Path) -> None:
    text = render(results_table(shown(tmp_path).results, title="run demo"))
    assert "xfs/native/host-dir" in text and "xfs/docker:overlay2/writable-layer" in text
    assert "RR IOPS" in text and "SW MiB/s" in text
    assert "48.2k" in text and "base" in text and "×0.50" in text
    assert "900" in text and "n=1" in text  # the one-trial cell says so, next to cells with intervals
    assert "failed (tool-error)" in text


def test_refused_table_names_the_stack_and_the_reason(tmp_path: Path) -> None:
    text = render(refused_table(shown(tmp_path).data.refused))
    assert "loop/xfs/docker:devicemapper/volume" in text and "thin-pool" in text


def test_show_json_is_strict_json(tmp_path: Path) -> None:
    doc = json.loads(json.dumps(show_json(shown(tmp_path)), allow_nan=False))
    assert doc["run"]["name"] == "demo" and doc["run"]["spec"] == {"name": "demo"}
    failed = [c for c in doc["cells"] if c["failed"]]
    assert failed[0]["failure"] == "tool-error" and failed[0]["summary"]["mean"] is None
    assert doc["refused"][0]["reason"] == "devicemapper needs thin-pool tools"


def test_json_says_why_faster_than_physics_had_no_bound(tmp_path: Path) -> None:
    cells = {(c["stack_label"], c["workload"]): c for c in show_json(shown(tmp_path))["cells"]}
    layer = cells[("loop/xfs/docker:overlay2/writable-layer", "RR")]["physics"]
    assert layer["status"] == "pass"  # half native's IOPS: not faster than its bound
    assert cells[("loop/xfs/native/host-dir", "RR")]["physics"] is None  # the baseline itself


def _nan_to_none(obj: Any) -> Any:
    """The two-pass way plain replaced: the reference it is held to."""
    if isinstance(obj, dict):
        return {k: _nan_to_none(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_nan_to_none(v) for v in obj]
    return None if isinstance(obj, float) and obj != obj else obj


def test_plain_is_asdict_with_nan_as_none(tmp_path: Path) -> None:
    results = shown(tmp_path).results
    flagged = replace(results[0], flags=(Check("noisy", "flag", "CV 14%"),))
    assert any(r.ratio.ci_low != r.ratio.ci_low for r in results)  # a NaN to turn into None
    assert [plain(r) for r in [*results, flagged]] == [_nan_to_none(asdict(r)) for r in [*results, flagged]]
