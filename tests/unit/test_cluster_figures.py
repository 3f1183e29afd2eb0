"""The figure of a Ceph cell's trial against its cluster's recovery, drawn from a real run (tests/data/ceph/run:
three OSDs at size 3, healthy, degraded and recovering, 4k random writes with fio's latency log, captured here
2026-12-07 with the machine busy) read back as the report reads it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from layerbench.report import cluster_figures, html
from layerbench.report.view import view
from layerbench.store.db import Store
from layerbench.store.read import RunData, load

RUN = Path(__file__).resolve().parents[1] / "data" / "ceph" / "run" / "states.db"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> RunData:
    path = tmp_path_factory.mktemp("ceph") / "r.db"
    shutil.copy(RUN, path)
    return load(Store.open(path, create=False), "latest", latency=True)


def test_each_state_draws_its_latency_over_its_clusters_recovery(data: RunData) -> None:
    fig = cluster_figures.recovery_over_time(data.monitor, data.timelines, data.cells)
    assert fig is not None
    top, middle, bottom, rate = fig.axes
    assert len(top.lines) == 3 and len(middle.lines) == 3  # each cell's writes, from its latency log
    labels = [str(line.get_label()) for line in bottom.lines]
    states = [next((s for s in ("degraded", "recovering") if s in label), "healthy") for label in labels]
    assert states == ["healthy", "degraded", "recovering"]  # in the spec's order
    # The lines are the stored points: the recovering trial began with degraded objects, the healthy one had none.
    healthy, _, recovering = bottom.lines
    assert max(healthy.get_ydata()) == 0 and recovering.get_ydata()[0] > 0
    monitor = data.monitor
    stored = monitor[(monitor["series"] == cluster_figures.DEGRADED)].groupby("trial_id", observed=True)["value"]
    assert sorted(len(line.get_xdata()) for line in bottom.lines) == sorted(stored.size().tolist())
    assert len(rate.lines) == 3


def test_a_run_without_a_cluster_has_no_such_figure(data: RunData) -> None:
    plain = data.monitor[~data.monitor["series"].astype(str).str.startswith("ceph.")]
    assert cluster_figures.recovery_over_time(plain, data.timelines, data.cells) is None
    assert cluster_figures.recovery_over_time(data.monitor.iloc[0:0], data.timelines, data.cells) is None


def test_in_the_html_report(data: RunData, tmp_path: Path) -> None:
    page = html.render(view(data), tmp_path).read_text()
    assert 'id="fig-recovery-over-time"' in page
    assert (tmp_path / "figures" / "recovery-over-time.png").stat().st_size > 5000


def test_the_throughput_by_littles_law_agrees_with_the_trials_measured_iops(data: RunData) -> None:
    # jobs × iodepth ÷ mean latency per interval, against what fio counted over the whole trial.
    from layerbench.analysis.stats import per_trial

    measured = per_trial(data.samples, "iops").set_index("trial_id")["value"]
    checked = 0
    for t in data.timelines:
        cell = next(c for c in data.cells if c.cell_id == t.cell_id)
        depth = cluster_figures.in_flight(cell)
        points = cluster_figures.little(t, depth) if depth else []
        if not points or t.trial_id not in measured.index:
            continue
        mean = sum(rate for _, rate in points) / len(points)
        assert 0.9 < mean / float(measured[t.trial_id]) < 1.1, (cell.stack_label, mean, measured[t.trial_id])
        checked += 1
    assert checked >= 3
