"""Prometheus and OpenMetrics: a stored run as an OpenMetrics file (`export --format openmetrics`), and a run
served while it goes on (`run --metrics-port`), both through the official client library (prometheus_client).

Both name a trial the same way: labelled by run, cell (its id and label), stack, workload and repetition,
its headline metric in a family of its own with its unit (``layerbench_trial_iops``,
``layerbench_trial_bandwidth_bytes_per_second``, ``layerbench_trial_ops_per_second``...), the slower
direction's p99 latency where the tool measured one, each check's verdict and the trial's status as
OpenMetrics state sets. An export stamps each trial's samples with the time it ended, so that
``promtool tsdb create-blocks-from openmetrics`` can load a run's history; a live endpoint does not (a
scrape is the time).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from prometheus_client import start_http_server
from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily, Metric, StateSetMetricFamily
from prometheus_client.openmetrics.exposition import generate_latest
from prometheus_client.registry import Collector, CollectorRegistry

from layerbench.analysis.comparisons import headline_metric
from layerbench.errors import PrerequisiteError
from layerbench.records.sample import Sample
from layerbench.records.trial import TrialRecord
from layerbench.spec.models import Cell, Workload
from layerbench.store.read import RunData

LABELS = ("run", "cell_id", "cell", "stack", "workload", "repetition")
# A headline metric's family: its name after the prefix, its OpenMetrics unit (stored in it), its help text.
HEADLINES = {
    "iops": ("iops", "", "I/O operations per second of the trial, all jobs and directions (random I/O)"),
    "bw": ("bandwidth", "bytes_per_second", "bandwidth of the trial, all jobs and directions (sequential I/O)"),
    "ops": ("ops_per_second", "", "operations per second of the trial, all clients together"),
    "iozone_geomean": ("iozone_geomean", "bytes_per_second", "IOzone's geometric mean over its surface"),
}
# The p99 samples a trial may hold, and their scale to seconds: fio's completion latency, a database client's.
P99 = {("clat_p99", "ns"): 1e-9, ("lat_p99_us", "us"): 1e-6}
CHECK_STATES = ("pass", "flag", "skip")
STATUS_STATES = ("ok", "failed")


@dataclass(frozen=True)
class TrialFigures:
    """What the metrics say of one trial, from a stored run or a trial just finished."""

    labels: tuple[str, ...]  # LABELS' values
    status: str
    headline: tuple[str, float] | None  # (metric, value): its headline metric, summed over jobs and directions
    p99_seconds: float | None
    checks: dict[str, str]  # check name → pass, flag or skip
    ended_at: float | None = None


def headline_value(workload: Workload, samples: Iterable[tuple[str, float]]) -> tuple[str, float] | None:
    """The workload's headline metric summed over a trial's samples (metric, value), as comparisons count it."""
    metric = headline_metric(workload)
    values = [v for m, v in samples if m == metric]
    return (metric, sum(values)) if values else None


def p99_seconds(samples: Iterable[tuple[str, str, float]]) -> float | None:
    """The p99 latency of the trial's slowest direction or operation (samples: metric, unit, value), in seconds:
    fio's completion latency, a database client's operations (the slowest instance's)."""
    found = [v * P99[(m, u)] for m, u, v in samples if (m, u) in P99]
    return max(found) if found else None


def of_record(labels: Sequence[str], workload: Workload, status: str, samples: Sequence[Sample],
              checks: dict[str, str]) -> TrialFigures:  # fmt: skip
    """A trial just finished (a TrialRecord's parts); ``labels``: LABELS' values."""
    ok = status == "ok"
    headline = headline_value(workload, ((s.metric, s.value) for s in samples)) if ok else None
    p99 = p99_seconds((s.metric, s.unit, s.value) for s in samples) if ok else None
    return TrialFigures(tuple(labels), status, headline, p99, checks)


def of_run(data: RunData) -> list[TrialFigures]:
    """Every trial of a stored run, in the order they ran."""
    cells = {c.cell_id: c for c in data.cells}
    per_trial = _per_trial(data.samples)
    checks: dict[int, dict[str, str]] = {}
    for k in data.checks:
        checks.setdefault(k.trial_id, {})[k.name] = k.status
    out = []
    for t in data.trials:
        c = cells.get(t.cell_id)
        if c is None:
            continue
        rows = per_trial.get(t.id, [])
        ok = t.status == "ok"
        headline = headline_value(c.cell.workload, ((m, v) for m, _, v in rows)) if ok else None
        labels = (data.run.id, c.cell_id, c.label, c.stack_label, c.workload, str(t.repetition))
        figures = TrialFigures(labels, t.status, headline, p99_seconds(rows) if ok else None, checks.get(t.id, {}),
                               t.ended_at)  # fmt: skip
        out.append(figures)
    return out


def _per_trial(samples: pd.DataFrame) -> dict[int, list[tuple[str, str, float]]]:
    """Per trial id: (metric, unit, value) of its samples."""
    out: dict[int, list[tuple[str, str, float]]] = {}
    if samples.empty:
        return out
    for tid, metric, unit, value in samples[["trial_id", "metric", "unit", "value"]].itertuples(index=False):
        out.setdefault(int(tid), []).append((str(metric), str(unit), float(value)))
    return out


def families(trials: Sequence[TrialFigures], prefix: str = "layerbench_trial") -> list[Metric]:
    """The trials' metric families: headline metrics (one family per metric), p99, checks, status."""
    heads: dict[str, GaugeMetricFamily] = {}
    p99 = GaugeMetricFamily(
        f"{prefix}_p99_latency",
        "p99 latency of the trial's slowest direction (fio's completion latency) or operation (a database client's)",
        labels=LABELS,
        unit="seconds",
    )
    checks = StateSetMetricFamily(f"{prefix}_check", "each check's verdict on the trial", labels=(*LABELS, "check"))
    status = StateSetMetricFamily(f"{prefix}_status", "whether the trial succeeded", labels=LABELS)
    for t in trials:
        if t.headline is not None:
            metric, value = t.headline
            name, unit, doc = HEADLINES.get(metric, (metric, "", f"the trial's {metric}"))
            family = heads.setdefault(metric, GaugeMetricFamily(f"{prefix}_{name}", doc, labels=LABELS, unit=unit))
            family.add_metric(t.labels, value, timestamp=t.ended_at)
        if t.p99_seconds is not None:
            p99.add_metric(t.labels, t.p99_seconds, timestamp=t.ended_at)
        for name, verdict in sorted(t.checks.items()):
            states = {s: s == verdict for s in CHECK_STATES}
            checks.add_metric((*t.labels, name), states, timestamp=t.ended_at)
        status.add_metric(t.labels, {s: s == t.status for s in STATUS_STATES}, timestamp=t.ended_at)
    return [*heads.values(), p99, checks, status]


class _Fixed(Collector):
    def __init__(self, metrics: list[Metric]) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        yield from self.metrics


def run_text(data: RunData) -> bytes:
    """A stored run in the OpenMetrics text format, ending in ``# EOF``."""
    info = InfoMetricFamily("layerbench_run", "the run", labels=("run",))
    host = data.run.host
    info.add_metric(
        (data.run.id,),
        {"name": data.run.name, "status": data.run.status, "kernel": str(host.get("kernel", "")),
         "spec_digest": data.run.spec_digest},
    )  # fmt: skip
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Fixed([info, *families(of_run(data))]))
    return generate_latest(registry)


def write(data: RunData, path: Path | None) -> str:
    """``run_text`` into ``path``, or standard output without one; returns where it went."""
    text = run_text(data)
    if path is None:
        sys.stdout.buffer.write(text)
        sys.stdout.flush()
        return "standard output"
    path.write_bytes(text)
    return str(path)


# --- a run while it goes on ------------------------------------------------------------------------


@dataclass
class LiveState:
    """What `run --metrics-port` serves, updated by the run (trials) and the monitor's thread (points)."""

    run_id: str
    total: int
    done: int = 0
    failed: int = 0
    last: TrialFigures | None = None
    monitor: dict[tuple[str, str], float] = field(default_factory=dict)  # (series, unit) → latest value
    started: float = field(default_factory=time.time)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def trial_ended(self, cell: Cell, repetition: int, record: TrialRecord) -> None:
        """The run loop's on_trial: a trial just saved."""
        labels = (self.run_id, cell.id, cell.label(), cell.stack.label(), cell.workload.name, str(repetition))
        checks = {c.name: c.status for c in record.checks}
        self.trial_done(of_record(labels, cell.workload, record.status, record.samples, checks))

    def trial_done(self, figures: TrialFigures) -> None:
        with self.lock:
            self.done += 1
            self.failed += figures.status != "ok"
            self.last = figures

    def monitor_point(self, series: str, value: float, unit: str) -> None:
        with self.lock:
            self.monitor[(series, unit)] = value


class LiveCollector(Collector):
    def __init__(self, state: LiveState) -> None:
        self.state = state

    def collect(self) -> Iterator[Metric]:
        s = self.state
        with s.lock:
            done, failed, total, last, monitor = s.done, s.failed, s.total, s.last, dict(s.monitor)
        for name, doc, value, unit in (
            ("layerbench_trials_done", "trials finished so far (ok or failed)", done, ""),
            ("layerbench_trials_failed", "trials that failed so far", failed, ""),
            ("layerbench_trials_planned", "trials the run plans at most (a precision target may stop sooner)",
             total, ""),
            ("layerbench_run_started", "when the run started", s.started, "seconds"),
        ):  # fmt: skip
            gauge = GaugeMetricFamily(name, doc, labels=("run",), unit=unit)
            gauge.add_metric((s.run_id,), value)
            yield gauge
        if last is not None:
            yield from families([last], prefix="layerbench_last_trial")
        gauge = GaugeMetricFamily(
            "layerbench_monitor", "the host's latest monitor figures in the running trial (monitor.py's series)",
            labels=("run", "series", "unit"),
        )  # fmt: skip
        for (series, unit), value in sorted(monitor.items()):
            gauge.add_metric((s.run_id, series, unit), value)
        yield gauge


@contextmanager
def serving(address: str, port: int, state: LiveState) -> Iterator[str]:
    """Serve ``state`` at http://ADDRESS:PORT/metrics (Prometheus' text format, or OpenMetrics where the scraper
    asks for it) until the block ends; yields the URL (port 0: one the kernel picked)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(LiveCollector(state))
    try:
        server, thread = start_http_server(port, address, registry)
    except OSError as exc:
        raise PrerequisiteError(
            f"cannot serve metrics at {address}:{port}: {exc.strerror or exc}",
            hint="choose another --metrics-port (0: any free one), or another --metrics-address",
        ) from exc
    host = f"[{address}]" if ":" in address else address
    try:
        yield f"http://{host}:{server.server_port}/metrics"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
