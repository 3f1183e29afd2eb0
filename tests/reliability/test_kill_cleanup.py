"""SIGKILL a run while its container holds the device, then `layerbench cleanup`: nothing is left.

Waits on state (the ledger says a container is live), never on time, so it holds on a slow or busy
host; it runs here (cgroup v1) and in the test VM (cgroup v2, systemd), where the daemon's cgroups
live in another hierarchy.
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

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.requires_root,
    pytest.mark.requires_fio,
    pytest.mark.requires_docker,
    pytest.mark.slow,
]

SPEC = {
    "name": "kill-then-cleanup",
    "device": {"kind": "loop", "size": "384MiB"},
    "stacks": [{"filesystem": "ext4", "engine": "docker:overlay2", "placement": "volume", "limits": {"cpus": 1}}],
    "workloads": [
        {"name": "RR", "rw": "randread", "bs": "4k", "iodepth": 4, "size": "32MiB", "runtime_s": 30, "ramp_s": 0}
    ],
}
# A bound on a broken run, not a wait: the loop below returns as soon as the state is reached.
STATE_TIMEOUT_S = 900.0


def live_kinds(ledger: Path) -> set[str]:
    if not ledger.exists():
        return set()
    try:
        with sqlite3.connect(ledger) as db:
            return {k for (k,) in db.execute("SELECT kind FROM resources WHERE removed_at IS NULL")}
    except sqlite3.OperationalError:  # created, its schema not yet committed
        return set()


def test_sigkill_with_a_container_up_then_cleanup(tmp_path: Path) -> None:
    dirs = {"db": tmp_path / "r.db", "work": tmp_path / "work", "state": tmp_path / "state"}
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    proc = support.start(["run", str(spec)], dirs)
    deadline = time.monotonic() + STATE_TIMEOUT_S
    while "container" not in live_kinds(dirs["state"] / "ledger.db"):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never started its container"
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert {"dockerd", "container", "loop"} <= live_kinds(dirs["state"] / "ledger.db")
    cleanup = support.run(["cleanup"], dirs, timeout=600)
    assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
    assert live_kinds(dirs["state"] / "ledger.db") == set()
    assert leftovers(dirs["work"]) == []
