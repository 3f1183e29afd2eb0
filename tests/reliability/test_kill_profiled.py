"""SIGKILL a run while perf records its trial, then `layerbench cleanup`: no perf process, no perf file left.

Waits on state (the ledger says the profile's directory and perf's processes are live), never on time.
"""

from __future__ import annotations

import signal
import sqlite3
import time
from pathlib import Path

import pytest
import yaml

from tests import support
from tests.integration.leftovers import leftovers
from tests.reliability.test_kill_cleanup import STATE_TIMEOUT_S, live_kinds

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.requires_root,
    pytest.mark.requires_fio,
    pytest.mark.requires_perf,
    pytest.mark.slow,
]

SPEC = {
    "name": "kill-while-profiling",
    "device": {"kind": "zram", "size": "256MiB"},
    "stacks": [{"filesystem": "ext4", "engine": "native", "placement": "host-dir"}],
    "workloads": [{"name": "RR", "rw": "randread", "bs": "4k", "size": "32MiB", "runtime_s": 60, "ramp_s": 0}],
    "profile": "cpu",
}


def live_profilers(ledger: Path) -> int:
    """perf processes recorded with their PIDs and not yet removed."""
    if not ledger.exists():
        return 0
    with sqlite3.connect(ledger) as db:
        rows = db.execute("SELECT detail FROM resources WHERE removed_at IS NULL AND kind='process'").fetchall()
    return sum(1 for (detail,) in rows if '"profiler"' in detail and '"pid"' in detail)


def test_sigkill_while_perf_records_then_cleanup(tmp_path: Path) -> None:
    dirs = {"db": tmp_path / "r.db", "work": tmp_path / "work", "state": tmp_path / "state"}
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    proc = support.start(["run", str(spec)], dirs)
    ledger = dirs["state"] / "ledger.db"
    deadline = time.monotonic() + STATE_TIMEOUT_S
    # All three perf processes started (their PIDs recorded) and the workload running beside them.
    while not ({"dir", "zram"} <= live_kinds(ledger) and live_profilers(ledger) == 3):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never started its profilers"
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert list((dirs["work"]).glob("*/lb-profile-*")), "perf's directory should be there to clean"
    cleanup = support.run(["cleanup"], dirs, timeout=600)
    assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
    assert live_kinds(ledger) == set()
    assert not list((dirs["work"]).glob("*/lb-profile-*"))
    assert leftovers(dirs["work"]) == []  # perf's command lines name the work directory: none still runs
