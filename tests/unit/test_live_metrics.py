"""`run --metrics-port`'s endpoint without a run: the live state fed as the pipeline and the monitor feed it,
served on a free loopback port, scraped as Prometheus does and read with the client library's parsers."""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families
from prometheus_client.parser import text_string_to_metric_families as prometheus_families

from layerbench.errors import PrerequisiteError
from layerbench.records.checks import Check
from layerbench.records.info import TrialInfo
from layerbench.records.trial import TrialRecord
from layerbench.report import metrics
from layerbench.run.measure.monitor import Monitor
from layerbench.spec.models import Cell, FioWorkload, StackSpec
from layerbench.workloads import fio

DATA = Path(__file__).parent.parent / "data" / "fio" / "3.33"
CELL = Cell(
    stack=StackSpec.model_validate(
        {"device": {"kind": "loop"}, "filesystem": "ext4", "engine": "native", "placement": "host-dir"}
    ),
    workload=FioWorkload(name="RR", rw="randread", numjobs=2, iodepth=4),
)


def scrape(url: str, openmetrics: bool) -> dict:
    accept = "application/openmetrics-text; version=1.0.0" if openmetrics else "text/plain"
    with urllib.request.urlopen(urllib.request.Request(url, headers={"Accept": accept}), timeout=10) as answer:
        text = answer.read().decode()
    parse = openmetrics_families if openmetrics else prometheus_families
    return {f.name: f for f in parse(text)}


def test_progress_last_trial_and_monitor_served() -> None:
    state = metrics.LiveState("run-1", total=4)
    text = (DATA / "latlog-randread-4k-2x4.json").read_text()
    record = TrialRecord(CELL.id, 0, "ok", None, 0.0, 1.0, ["fio"], text, "", TrialInfo(), fio.samples(fio.parse(text)),
                         [Check("device-accounting", "flag", "page cache")])  # fmt: skip
    with Monitor([], interval=0.05, on_point=state.monitor_point) as mon:
        deadline = time.monotonic() + 30
        while not any(p.series == "cpu.iowait" for p in list(mon.points)) and time.monotonic() < deadline:
            time.sleep(0.02)
    state.trial_ended(CELL, 0, record)
    with metrics.serving("127.0.0.1", 0, state) as url:
        om = scrape(url, openmetrics=True)
        prom = scrape(url, openmetrics=False)
    assert om["layerbench_trials_done"].samples[0].value == 1 == prom["layerbench_trials_done"].samples[0].value
    assert om["layerbench_trials_planned"].samples[0].value == 4
    iops = om["layerbench_last_trial_iops"].samples[0]
    assert iops.value == pytest.approx(fio.parse(text).jobs[0].directions["read"].iops)
    assert iops.labels["cell"] == CELL.label() and iops.labels["repetition"] == "0"
    flagged = [s for s in om["layerbench_last_trial_check"].samples if s.value == 1]
    assert [s.labels["layerbench_last_trial_check"] for s in flagged] == ["flag"]
    series = {s.labels["series"] for s in om["layerbench_monitor"].samples}
    assert {"cpu.iowait", "cpu.user", "mem.used"} <= series


def test_a_port_in_use_is_said_plainly() -> None:
    state = metrics.LiveState("run-1", total=1)
    with metrics.serving("127.0.0.1", 0, state) as url:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        with pytest.raises(PrerequisiteError, match="cannot serve metrics"), metrics.serving("127.0.0.1", port, state):
            pass
