"""SIGKILL a run while its Podman container holds the device, then `layerbench cleanup`: nothing is left,
not the service, its conmon, its mounts, nor the host directories Podman created outside its roots.

Waits on state (the ledger says a container is live), never on time.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
import yaml

from layerbench.stack.engines.podman import HOST_DIRS
from tests import support
from tests.integration.leftovers import leftovers
from tests.reliability.test_kill_cleanup import STATE_TIMEOUT_S, live_kinds

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.requires_root,
    pytest.mark.requires_fio,
    pytest.mark.requires_podman,
    pytest.mark.slow,
]

SPEC = {
    "name": "kill-podman-then-cleanup",
    "device": {"kind": "loop", "size": "384MiB"},
    "stacks": [{"filesystem": "ext4", "engine": "podman:overlay", "placement": "volume", "limits": {"cpus": 1}}],
    "workloads": [
        {"name": "RR", "rw": "randread", "bs": "4k", "iodepth": 4, "size": "32MiB", "runtime_s": 30, "ramp_s": 0}
    ],
}


def test_sigkill_with_a_podman_container_up_then_cleanup(tmp_path: Path) -> None:
    dirs = {"db": tmp_path / "r.db", "work": tmp_path / "work", "state": tmp_path / "state"}
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    host_before = {d for d in HOST_DIRS if d.exists()}
    proc = support.start(["run", str(spec)], dirs)
    deadline = time.monotonic() + STATE_TIMEOUT_S
    while "container" not in live_kinds(dirs["state"] / "ledger.db"):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never started its container"
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert {"podman", "container", "loop"} <= live_kinds(dirs["state"] / "ledger.db")
    cleanup = support.run(["cleanup"], dirs, timeout=600)
    assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
    assert live_kinds(dirs["state"] / "ledger.db") == set()
    assert leftovers(dirs["work"]) == []
    assert {d for d in HOST_DIRS if d.exists()} <= host_before
