"""Findings: each layer judged against the one beneath it, paired by round, named only when material."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from markupsafe import escape

from layerbench.analysis import findings, overhead
from layerbench.records.checks import Check
from layerbench.records.info import TrialInfo
from layerbench.records.sample import Sample
from layerbench.records.trial import TrialRecord
from layerbench.report import html
from layerbench.report.terminal import show_json
from layerbench.report.view import view
from layerbench.run.loop import register_cells
from layerbench.spec import load as spec_load
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.matrix import expand
from layerbench.spec.models import StackSpec
from layerbench.store.db import Store
from layerbench.store.read import RunData, load

SPEC = """
name: layers
device: {kind: zram, size: 1GiB}
stacks:
  - {filesystem: none, placement: raw}
  - {filesystem: ext4, engine: native, placement: host-dir}
  - {filesystem: ext4, engine: "docker:overlay2", placement: [volume, writable-layer]}
workloads:
  - {name: RW, rw: randwrite, bs: 4k}
baseline: {filesystem: none, placement: raw}
"""
# Per round, the machine's speed; per layer, what it costs.
DRIFT = [1.0, 1.4, 0.7, 1.2]
COST = {"raw": 1.0, "host-dir": 0.8, "volume": 0.8 * 0.99, "writable-layer": 0.8 * 0.5}


def stored_run(
    tmp_path: Path, caps: HostCaps, rounds: int, spec: str = SPEC, cost: Callable[[StackSpec], float] | None = None
) -> RunData:
    """A run of ``spec`` stored as if measured: each round's drift times each stack's ``cost``, ±0.2% (a
    different error for every trial: identical per-round ratios have no spread to judge)."""
    cost = cost or (lambda stack: COST[stack.placement.kind])
    exp = spec_load.parse(spec, "stored")
    matrix = expand(exp, caps)
    store = Store.open(tmp_path / "r.db")
    run_id = store.new_run(exp.name, exp.model_dump_json(), exp.digest(), {})
    register_cells(store, run_id, matrix)
    for rep in range(rounds):
        for i, c in enumerate(matrix.cells):
            iops = 100_000 * DRIFT[rep] * cost(c.stack) * (1 + 0.002 * math.sin(1 + 2.1 * rep + 1.3 * i))
            sample = Sample("iops", iops, "IOPS", "write")
            store.record_trial(run_id, TrialRecord(c.id, rep, "ok", None, 0, 1, [], "", "", TrialInfo(), [sample]))
    return load(store, "latest")


def test_each_layer_is_judged_against_the_one_beneath_it_through_the_drift(tmp_path: Path, full_caps: HostCaps) -> None:
    data = stored_run(tmp_path, full_caps, rounds=4)
    found = {(f.subject.split("/")[-1], f.reference.split("/")[-1]): f for f in findings.of_run(data, [])}
    assert set(found) == {("host-dir", "raw"), ("volume", "host-dir"), ("writable-layer", "host-dir")}
    assert found[("writable-layer", "host-dir")].verdict == "slower"
    assert abs(found[("writable-layer", "host-dir")].ratio.ratio - 0.5) < 0.01
    assert found[("host-dir", "raw")].verdict == "slower"
    # 1% is significant through the pairing, but not material, and its whole interval lies inside the band: ≈.
    volume = found[("volume", "host-dir")]
    assert volume.ratio.significant and volume.verdict == "equivalent"
    assert 1 / 1.05 < volume.ratio.ci_low < volume.ratio.ci_high < 1.05
    lines = findings.summary_lines(findings.of_run(data, overhead.of_run(data)))
    writable = next(line for line in lines if "writable-layer vs" in line)
    assert "-50% on RW (×0.50, 95% CI 0.50-0.50)" in writable
    assert any("≈ on RW (×0.99, 95% CI 0.9" in line for line in lines), lines


def test_one_round_decides_nothing(tmp_path: Path, full_caps: HostCaps) -> None:
    data = stored_run(tmp_path, full_caps, rounds=1)
    assert {f.verdict for f in findings.of_run(data, [])} == {"undecided"}
    assert all(
        line.endswith(": undecided on RW (×0.50, one round)")
        or "(×0.80, one round)" in line
        or "(×0.99, one round)" in line
        for line in findings.summary_lines(findings.of_run(data, []))
    )


def test_a_doubt_marks_a_finding_and_a_noisy_spread_does_not(tmp_path: Path, full_caps: HostCaps) -> None:
    data = stored_run(tmp_path, full_caps, rounds=4)
    results = overhead.of_run(data)
    writable = next(c.cell_id for c in data.cells if c.stack.placement.kind == "writable-layer")
    for name, doubted in (("contended", True), ("noisy", False)):
        marked = [replace(r, flags=(Check(name, "flag", ""),)) if r.cell_id == writable else r for r in results]
        (f,) = [f for f in findings.of_run(data, marked) if f.subject.endswith("writable-layer")]
        assert f.flagged is doubted


def test_show_json_and_the_report_open_with_the_findings(tmp_path: Path, full_caps: HostCaps) -> None:
    v = view(stored_run(tmp_path, full_caps, rounds=4))
    (line,) = [line for line in v.finding_lines if "writable-layer vs" in line]
    page = html.render(v, tmp_path / "report", workloads=None).read_text()
    assert 'id="findings"' in page and str(escape(line)) in page
    assert page.index('id="findings"') < page.index("<h2>Results</h2>")
    listed = show_json(v)["findings"]
    assert {f["verdict"] for f in listed} == {"slower", "equivalent"} and all("change_pct" in f for f in listed)
