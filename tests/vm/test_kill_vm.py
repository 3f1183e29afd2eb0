"""SIGKILL a run while its guest is up, then `layerbench cleanup`: the qemu process (its own session, so
it outlives the run) is killed by the PID and start time the ledger holds, and its disk file, mount and
loop device go after it. Waits on state (the ledger, the guest's process), never on time.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
import yaml

from tests import support
from tests.integration.leftovers import leftovers
from tests.reliability.test_kill_cleanup import STATE_TIMEOUT_S, live_kinds

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.requires_vm,
    pytest.mark.requires_root,
    pytest.mark.requires_fio,
    pytest.mark.slow,
    pytest.mark.timeout(600),  # a guest's start (about a minute here) and a cleanup
]

SPEC = {
    "name": "kill-vm-then-cleanup",
    "emulation": "allow",
    "device": {"kind": "loop", "size": "384MiB"},
    "stacks": [{"filesystem": "ext4", "engine": "vm", "placement": "host-dir"}],
    "workloads": [{"name": "RR", "rw": "randread", "bs": "4k", "iodepth": 4, "size": "32MiB", "runtime_s": 60}],
}


def _guests(work: Path) -> list[int]:
    """qemu processes whose command line names this run's work directory."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmd[0].endswith(b"qemu-system-x86_64") and any(str(work).encode() in a for a in cmd):
            found.append(int(proc.name))
    return found


def test_sigkill_with_a_guest_up_then_cleanup(tmp_path: Path) -> None:
    dirs = {"db": tmp_path / "r.db", "work": tmp_path / "work", "state": tmp_path / "state"}
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    proc = support.start(["run", str(spec)], dirs)
    deadline = time.monotonic() + STATE_TIMEOUT_S
    while not ("vm" in live_kinds(dirs["state"] / "ledger.db") and _guests(dirs["work"])):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never started its guest"
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert _guests(dirs["work"]), "the guest should outlive the run it belonged to"
    assert {"vm", "file", "mount", "loop"} <= live_kinds(dirs["state"] / "ledger.db")
    cleanup = support.run(["cleanup"], dirs, timeout=600)
    assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
    assert live_kinds(dirs["state"] / "ledger.db") == set()
    assert _guests(dirs["work"]) == []
    assert leftovers(dirs["work"], beside_others=True) == []
