"""A trial the monitor saw disturbed is measured again (trials.again_if_contended), through the CLI on zram:
a busy loop on every core beside the run makes each attempt contended, so the trial is measured again as
often as asked, each time after waiting its longest for a quiet host; the disturbed attempt is kept in the
record, and the last attempt stands, flagged."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from layerbench.run import quiet
from tests import support
from tests.integration.leftovers import leftovers

pytestmark = [pytest.mark.requires_root, pytest.mark.requires_fio]

SPEC = """
name: contended-again
device: {kind: zram, size: 256MiB}
stacks:
  - {filesystem: ext4, engine: native, placement: host-dir}
workloads:
  - {name: rr, rw: randread, bs: 4k, size: 16MiB, runtime_s: 1}
trials: {repetitions: 1, again_if_contended: 1}
"""


@contextlib.contextmanager
def busy_cores() -> Iterator[None]:
    """A busy loop per core, ended by PID: whatever else runs, they keep well over half a core busy."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    try:
        yield
    finally:
        for p in hogs:
            p.kill()
            p.wait(timeout=30)


def test_a_contended_trial_is_measured_again_and_its_disturbed_attempt_kept(tmp_path: Path) -> None:
    dirs = {"db": tmp_path / "results.db", "work": tmp_path / "work", "state": tmp_path / "state"}
    spec = tmp_path / "contended.yaml"
    spec.write_text(SPEC)
    with busy_cores():
        done = support.run(["run", str(spec)], dirs, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "measured again 1×: the host was busy" in done.stdout  # the trial's progress line
    assert "1 trials ok (1 measured again: the host was busy)" in done.stdout
    with sqlite3.connect(dirs["db"]) as db:
        (info,) = [json.loads(i) for (i,) in db.execute("SELECT info_json FROM trials")]
        checks = dict(db.execute("SELECT name, status FROM checks"))
    (attempt,) = info["disturbed"]
    assert attempt["contended"].startswith("other processes used")
    assert attempt["ended_at"] > attempt["started_at"]
    assert attempt["waited_s"] >= quiet.MAX_WAIT_S - 0.01  # for a quiet host, that never came
    assert any(metric == "iops" and value > 0 for metric, _, _, value in attempt["samples"])
    assert checks["contended"] == "flag"  # the last attempt was disturbed too, and says so
    assert leftovers(dirs["work"]) == []
