"""SIGKILL a run while a devicemapper container is up, then `layerbench cleanup`: no device-mapper device,
loop device, mount or process is left, in either mode.

loop-lvm: the killed dockerd leaves its thin pool, its thin devices and the loop devices under its data-root
active; direct-lvm: its thin devices on the pool, and layerbench's own volume group, loop device and file.
Waits on state (the ledger says a container is live), never on time. Skips with the reason where the kernel
lacks device-mapper (this host); runs in the test VM.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import support
from tests.integration.leftovers import leftovers
from tests.reliability.test_kill_cleanup import STATE_TIMEOUT_S, live_kinds
from tests.unavoidable_skips import cannot

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.requires_root,
    pytest.mark.requires_fio,
    pytest.mark.requires_docker,
    pytest.mark.slow,
]

ENGINES = {
    "loop-lvm": "docker:devicemapper",
    "direct-lvm": {"kind": "docker", "driver": "devicemapper", "mode": "direct-lvm"},
}


def spec(engine: Any) -> dict[str, Any]:
    return {
        "name": "kill-devicemapper",
        "device": {"kind": "zram", "size": "1GiB"},
        "stacks": [{"filesystem": "ext4", "engine": engine, "placement": "writable-layer"}],
        "workloads": [{"name": "RR", "rw": "randread", "bs": "4k", "size": "16MiB", "runtime_s": 600, "ramp_s": 0}],
    }


@pytest.mark.parametrize("mode", list(ENGINES))
def test_sigkill_with_a_devicemapper_container_up_then_cleanup(tmp_path: Path, mode: str) -> None:
    reason = support.refused(spec(ENGINES[mode]))
    if reason:
        cannot("device-mapper", reason)
    dirs = {"db": tmp_path / "r.db", "work": tmp_path / "work", "state": tmp_path / "state"}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec(ENGINES[mode])))
    proc = support.start(["run", str(path)], dirs)
    deadline = time.monotonic() + STATE_TIMEOUT_S
    while "container" not in live_kinds(dirs["state"] / "ledger.db"):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never started its container"
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    expected = {"dockerd", "container", "zram"} | ({"thinpool", "loop", "file"} if mode == "direct-lvm" else set())
    assert expected <= live_kinds(dirs["state"] / "ledger.db")
    left = leftovers(dirs["work"])
    assert any(item.startswith("device-mapper device") for item in left), left  # something for cleanup to do
    cleanup = support.run(["cleanup"], dirs, timeout=900)
    assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
    assert live_kinds(dirs["state"] / "ledger.db") == set()
    assert leftovers(dirs["work"]) == []
