"""`export --format openmetrics` on stored real runs, read back with the Prometheus client's own OpenMetrics
parser: tests/data/plan/scaling.db (PostgreSQL under YCSB, ops/s) and the captured fio sweeps (IOPS, bandwidth)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families
from typer.testing import CliRunner

from layerbench.cli.app import app
from layerbench.report import metrics
from layerbench.store.db import Store
from layerbench.store.read import load
from tests.unit.test_sweep_figures import captured_run

CAPTURED = Path(__file__).parent.parent / "data" / "plan" / "scaling.db"


def parsed(text: bytes) -> dict:
    return {f.name: f for f in text_string_to_metric_families(text.decode())}


@pytest.fixture()
def scaling_db(tmp_path: Path) -> Path:
    copy = tmp_path / "scaling.db"  # a copy: opening a store may migrate it, and the captured file must stay
    shutil.copyfile(CAPTURED, copy)
    return copy


def test_a_database_run_every_trial_labelled_by_cell(scaling_db: Path) -> None:
    data = load(Store.open(scaling_db, create=False), "latest")
    families = parsed(metrics.run_text(data))
    ops = families["layerbench_trial_ops_per_second"]
    assert ops.type == "gauge" and len(ops.samples) == len(data.trials) == 6
    frame = data.samples[data.samples["metric"] == "ops"]
    for s in ops.samples:
        trial = next(t for t in data.trials if t.cell_id == s.labels["cell_id"] and str(t.repetition) ==
                     s.labels["repetition"])  # fmt: skip
        assert s.value == pytest.approx(frame[frame["trial_id"] == trial.id]["value"].sum())
        assert float(s.timestamp) == pytest.approx(trial.ended_at)
        assert s.labels["run"] == data.run.id and s.labels["workload"] == "A"
    stacks = {s.labels["stack"] for s in ops.samples}
    assert stacks == {c.stack_label for c in data.cells}
    p99 = families["layerbench_trial_p99_latency_seconds"]
    assert p99.unit == "seconds" and all(0.001 < s.value < 0.1 for s in p99.samples)  # ms, from YCSB's µs


def test_checks_and_status_are_state_sets(scaling_db: Path) -> None:
    data = load(Store.open(scaling_db, create=False), "latest")
    families = parsed(metrics.run_text(data))
    checks = families["layerbench_trial_check"]
    assert checks.type == "stateset"
    chosen = {(s.labels["cell_id"], s.labels["repetition"], s.labels["check"]): s.labels["layerbench_trial_check"]
              for s in checks.samples if s.value == 1}  # fmt: skip
    stored = {(k.cell_id, str(k.repetition), k.name): k.status for k in data.checks}
    assert chosen == stored
    status = families["layerbench_trial_status"]
    assert {s.labels["layerbench_trial_status"] for s in status.samples if s.value == 1} == {"ok"}
    assert families["layerbench_run"].samples[0].labels["name"] == "plan-capture"


def test_fio_runs_give_iops_and_bandwidth(tmp_path: Path) -> None:
    store, run_id = captured_run(tmp_path / "r.db")
    families = parsed(metrics.run_text(load(store, run_id)))
    iops = {s.labels["workload"]: s.value for s in families["layerbench_trial_iops"].samples}
    bw = {s.labels["workload"]: s.value for s in families["layerbench_trial_bandwidth_bytes_per_second"].samples}
    assert set(iops) == {f"RR-iodepth{q}-numjobs{j}" for q in (1, 4, 16) for j in (1, 2)}
    assert set(bw) == {"SR-bs4096", "SR-bs65536", "SR-bs262144"}
    assert bw["SR-bs262144"] > bw["SR-bs4096"]  # 1088 against 134 MiB/s in the captured runs
    p99 = {s.labels["workload"]: s.value for s in families["layerbench_trial_p99_latency_seconds"].samples}
    assert p99["RR-iodepth1-numjobs1"] == pytest.approx(667648e-9)  # fio's clat p99 in that run's JSON


def test_the_cli_writes_it(scaling_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "run.om"
    result = CliRunner().invoke(app, ["export", "latest", "--db", str(scaling_db), "--format", "openmetrics",
                                      "-o", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert text.endswith("# EOF\n") and "layerbench_trial_ops_per_second{" in text
    assert parsed(text.encode())  # the parser rejects a file without # EOF or with a malformed line
