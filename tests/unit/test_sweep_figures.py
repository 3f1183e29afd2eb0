"""The sweep and time figures, drawn from a store holding real fio 3.33 output and latency logs of two small
sweeps (tests/data/fio/3.33/sweep: queue depth x job count, and block size), read back as the report reads them."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from layerbench.records.info import TrialInfo
from layerbench.records.trial import TrialRecord
from layerbench.report import html, sweep_figures
from layerbench.report.view import view
from layerbench.spec.matrix import sweep_points
from layerbench.spec.models import Cell, FioWorkload, StackSpec
from layerbench.store.db import CellRow, Store
from layerbench.store.read import RunData, load
from layerbench.workloads import fio

DATA = Path(__file__).parent.parent / "data" / "fio" / "3.33" / "sweep"
SPEC = [
    FioWorkload(name="RR", rw="randread", bs=4096, size=32 * 2**20, runtime_s=1, ramp_s=0,
                sweep={"iodepth": (1, 4, 16), "numjobs": (1, 2)}),
    FioWorkload(name="SR", rw="read", iodepth=4, size=32 * 2**20, runtime_s=1, ramp_s=0,
                sweep={"bs": (4096, 65536, 262144)}),
]  # fmt: skip
STACK = StackSpec.model_validate(
    {"device": {"kind": "loop"}, "filesystem": "ext4", "engine": "native", "placement": "host-dir"}
)


def captured_run(path: Path) -> tuple[Store, str]:
    """One run whose cells are the sweeps' points, each with its captured trial (output, samples, log)."""
    store = Store.open(path)
    spec = {"name": "sweeps", "workloads": [w.model_dump(mode="json") for w in SPEC]}
    run_id = store.new_run("sweeps", json.dumps(spec), "d", {"kernel": "6.18"})
    for name, (w, _) in sweep_points(SPEC).items():
        cell = Cell(stack=STACK, workload=w)
        row = CellRow(cell.id, cell.label(), STACK.label(), name, cell.model_dump_json(), False, None)
        store.add_cells(run_id, [row])
        text = (DATA / f"{name}.json").read_text()
        logs = {"lat": (DATA / f"{name}.lat.log").read_text()}
        now = time.time()
        samples = fio.samples(fio.parse(text))
        trial = TrialRecord(cell.id, 0, "ok", None, now, now, ["fio"], text, "", TrialInfo(lat_log_ms=100), samples)
        store.record_trial(run_id, TrialRecord(**{**trial.__dict__, "logs": logs}))
    return store, run_id


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> RunData:
    store, run_id = captured_run(tmp_path_factory.mktemp("sweeps") / "r.db")
    return load(store, run_id, latency=True)


def test_the_store_keeps_the_logs_and_reads_them_back_as_intervals(data: RunData) -> None:
    assert len(data.timelines) == 9
    name = {c.cell_id: c.workload for c in data.cells}
    two_jobs = next(t for t in data.timelines if name[t.cell_id] == "RR-iodepth16-numjobs2")
    assert two_jobs.every_ms == 100 and len(two_jobs.intervals) == 10
    assert {i.jobs for i in two_jobs.intervals} == {2}
    assert two_jobs.intervals[0].mean_ns == pytest.approx((336702 + 343516) / 2)


def test_heatmap_values_are_the_cells_own(data: RunData) -> None:
    v = view(data)
    iops = sweep_figures.per_trial_total(data.samples, "iops")
    by_name = {c.workload: c.cell_id for c in data.cells}
    whole = fio.parse((DATA / "RR-iodepth16-numjobs2.json").read_text()).jobs[0].directions["read"]
    assert iops[by_name["RR-iodepth16-numjobs2"]] == pytest.approx(whole.iops)
    p99 = sweep_figures.slowest_p99(v.fio_latency)
    assert p99[by_name["RR-iodepth1-numjobs1"]] == pytest.approx(667648, rel=0.02)  # fio's own p99, from bins
    fig = sweep_figures.qd_jobs_heatmaps(data.samples, v.fio_latency, data.cells)
    assert fig is not None
    texts = {t.get_text() for ax in fig.axes for t in ax.texts}
    assert f"{whole.iops:,.0f}" in texts  # the square of QD16 x 2 jobs says its IOPS
    assert [ax.get_xlabel() for ax in fig.axes[:2]] == ["queue depth (iodepth)"] * 2


def test_bandwidth_against_block_size(data: RunData) -> None:
    fig = sweep_figures.bandwidth_by_block_size(data.samples, data.cells)
    assert fig is not None
    line = fig.axes[0].lines[0]
    assert list(line.get_xdata()) == [4096, 65536, 262144]
    whole = fio.parse((DATA / "SR-bs262144.json").read_text()).jobs[0].directions["read"]
    assert line.get_ydata()[-1] == pytest.approx(whole.bw_bytes / 2**20)


def test_latency_over_time(data: RunData) -> None:
    fig = sweep_figures.latency_over_time(data.timelines, data.cells)
    assert fig is not None
    drawn = [ax for ax in fig.axes if ax.get_visible()]
    assert len(drawn) == 9 and all(len(ax.lines) == 1 for ax in drawn)


def test_nothing_to_draw_without_sweeps_or_logs(data: RunData) -> None:
    plain = [c for c in data.cells if not c.point.values]
    assert sweep_figures.qd_jobs_heatmaps(data.samples, view(data).fio_latency, plain) is None
    assert sweep_figures.bandwidth_by_block_size(data.samples, plain) is None
    assert sweep_figures.latency_over_time((), data.cells) is None


def test_in_the_html_report_and_as_files(data: RunData, tmp_path: Path) -> None:
    page = html.render(view(data), tmp_path, workloads=3).read_text()  # sweeps are drawn whole all the same
    for name in ("qd-jobs-heatmap", "bandwidth-block-size", "latency-over-time"):
        assert f'id="fig-{name}"' in page
        assert (tmp_path / "figures" / f"{name}.png").stat().st_size > 5000
        assert (tmp_path / "figures" / f"{name}.svg").exists()
