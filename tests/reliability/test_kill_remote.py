"""SIGKILL a run while a remote device is attached, then `layerbench cleanup`: the loop device, the FUSE
client, the NBD server, the link's qdiscs, the veth pair, the storage host's namespace and the zram
device are all gone. Waits on state (the ledger), never on time."""

from __future__ import annotations

import signal
import subprocess
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
    pytest.mark.requires_remote,
    pytest.mark.slow,
]

SPEC = {
    "name": "kill-remote",
    "device": {
        "kind": "zram",
        "size": "128MiB",
        "remote": {"transport": "nbd", "client": "fuse", "link": {"rate": "1gbit"}},
    },
    "stacks": [{"filesystem": "none", "placement": "raw"}],
    "workloads": [{"name": "RR", "rw": "randread", "bs": "4k", "size": "32MiB", "runtime_s": 60, "ramp_s": 0}],
}
ATTACHED = {"zram", "netns", "veth", "qdisc", "server", "mount", "loop", "process"}  # process: fio


def _zram_devices() -> set[str]:
    return {p.name for p in Path("/sys/block").glob("zram*")}


def test_sigkill_with_a_remote_device_attached_then_cleanup(tmp_path: Path) -> None:
    dirs = {"db": tmp_path / "r.db", "work": tmp_path / "work", "state": tmp_path / "state"}
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    zram_before = _zram_devices()
    proc = support.start(["run", str(spec)], dirs)
    deadline = time.monotonic() + STATE_TIMEOUT_S
    while not live_kinds(dirs["state"] / "ledger.db") >= ATTACHED:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never attached its remote device"
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert leftovers(dirs["work"]), "a SIGKILL leaves the attached device behind: nothing was tested"
    cleanup = support.run(["cleanup"], dirs, timeout=600)
    assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
    assert live_kinds(dirs["state"] / "ledger.db") == set()
    assert leftovers(dirs["work"]) == []
    assert _zram_devices() == zram_before
    assert not {"qemu-nbd", "nbdfuse", "fio"} & _live_commands()


def _live_commands() -> set[str]:
    """Commands of live processes; a zombie is no resource (this sandbox's init reaps late)."""
    listed = subprocess.run(["ps", "-eo", "stat=,comm="], capture_output=True, text=True, check=True).stdout
    return {line.split()[1] for line in listed.splitlines() if len(line.split()) == 2 and not line.startswith("Z")}
