"""`run --metrics-port` during a real short run (four 2 s trials, natively on ext4 on a loop device): the
endpoint is scraped while the run goes on, read with the Prometheus client's parsers, and gone after it."""

from __future__ import annotations

import re
import signal
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families
from prometheus_client.parser import text_string_to_metric_families as prometheus_families

from tests import support

pytestmark = [pytest.mark.requires_root, pytest.mark.requires_fio, pytest.mark.slow]

SPEC = """
name: live-metrics
description: four short trials to scrape while they run
device: {kind: loop, size: 256MiB}
stacks:
  - {filesystem: ext4, engine: native, placement: host-dir}
workloads:
  - {name: RR, rw: randread, bs: 4k, iodepth: 4, size: 32MiB, runtime_s: 2, ramp_s: 0.5}
  - {name: RW, rw: randwrite, bs: 4k, iodepth: 4, size: 32MiB, runtime_s: 2, ramp_s: 0.5}
trials: {repetitions: 2}
"""
DEADLINE_S = 240.0
OPENMETRICS = "application/openmetrics-text; version=1.0.0"


def scrape(url: str, accept: str) -> str:
    request = urllib.request.Request(url, headers={"Accept": accept})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return answer.read().decode()


def test_scraped_while_the_run_goes_on(tmp_path: Path) -> None:
    spec = tmp_path / "live.yaml"
    spec.write_text(SPEC)
    dirs = {"db": tmp_path / "r.db", "work": tmp_path / "work", "state": tmp_path / "state"}
    proc = support.start(["run", str(spec), "--metrics-port", "0"], dirs)
    deadline = time.monotonic() + DEADLINE_S
    try:
        assert proc.stderr is not None
        url = None
        while url is None and time.monotonic() < deadline:
            line = proc.stderr.readline()
            assert line, "the run ended before it served its metrics"
            found = re.search(r"metrics at (http://127\.0\.0\.1:\d+/metrics)", line)
            url = found.group(1) if found else None
        assert url is not None
        during = None
        while proc.poll() is None and time.monotonic() < deadline:  # until a trial ended and the monitor sampled
            families = {f.name: f for f in openmetrics_families(scrape(url, OPENMETRICS))}
            done = families["layerbench_trials_done"].samples[0].value
            if done >= 1 and families["layerbench_monitor"].samples:
                during = families
                break
            time.sleep(0.1)
        assert during is not None, "no scrape saw a finished trial and the monitor's figures while the run went on"
        assert during["layerbench_trials_planned"].samples[0].value == 4
        iops = during["layerbench_last_trial_iops"].samples[0]
        assert iops.value > 0 and iops.labels["stack"] == "loop/ext4/native/host-dir"
        assert iops.labels["workload"] in ("RR", "RW")
        checks = {s.labels["check"] for s in during["layerbench_last_trial_check"].samples}
        assert "device-accounting" in checks
        series = {s.labels["series"] for s in during["layerbench_monitor"].samples}
        assert "cpu.iowait" in series and any(s.startswith("disk.loop") for s in series)
        plain = {f.name: f for f in prometheus_families(scrape(url, "text/plain"))}  # Prometheus' own format too
        assert plain["layerbench_trials_done"].samples[0].value >= 1
        out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        assert proc.returncode == 0, out + err
        with pytest.raises(urllib.error.URLError):  # served while the run goes on, not after
            scrape(url, "text/plain")
    finally:
        if proc.poll() is None:  # as support.run does: asked to stop as Ctrl-C asks, so it tears its stack down
            proc.send_signal(signal.SIGINT)
            try:
                proc.communicate(timeout=support.TEARDOWN_S)
            finally:
                proc.kill()
                proc.wait()
