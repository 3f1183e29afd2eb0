"""SIGKILL a run while a remote device is attached, then `layerbench cleanup`: the client (a loop device
over nbdfuse, a kernel nbd connection, an NVMe/TCP controller, an iSCSI session), the target, the link's
qdiscs, the veth pair, the storage host's namespace and the zram device are all gone. Each transport
this machine has (remote_support); waits on state (the ledger), never on time."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from tests import remote_support, support
from tests.integration.leftovers import leftovers
from tests.reliability.test_kill_cleanup import STATE_TIMEOUT_S, live_kinds

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.requires_root,
    pytest.mark.requires_fio,
    pytest.mark.requires_remote,
    pytest.mark.slow,
]

# The ledger kinds of each transport's target and client, live once its device is attached.
ATTACHED = {
    "nbd-fuse": {"server", "mount", "loop"},
    "nbd": {"server", "nbd"},
    "nvme-tcp": {"nvmet", "nvme-connection"},
    "iscsi": {"iscsi-target", "iscsi-session"},
}
COMMON = {"zram", "netns", "veth", "qdisc", "process"}  # process: the trial's fio


def _spec(remote: dict) -> dict:
    return {
        "name": "kill-remote",
        "device": {"kind": "zram", "size": "128MiB", "remote": {**remote, "link": {"rate": "1gbit"}}},
        "stacks": [{"filesystem": "none", "placement": "raw"}],
        "workloads": [{"name": "RR", "rw": "randread", "bs": "4k", "size": "32MiB", "runtime_s": 60, "ramp_s": 0}],
    }


def _zram_devices() -> set[str]:
    return {p.name for p in Path("/sys/block").glob("zram*")}


@pytest.mark.parametrize("transport", list(remote_support.TRANSPORTS))
def test_sigkill_with_a_remote_device_attached_then_cleanup(tmp_path: Path, transport: str) -> None:
    remote = remote_support.require(transport)
    dirs = {"db": tmp_path / "r.db", "work": tmp_path / "work", "state": tmp_path / "state"}
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(_spec(remote)))
    zram_before = _zram_devices()
    proc = support.start(["run", str(spec)], dirs)
    deadline = time.monotonic() + STATE_TIMEOUT_S
    while not live_kinds(dirs["state"] / "ledger.db") >= ATTACHED[transport] | COMMON:
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
    assert not _kernel_clients(), "a kernel connection outlived cleanup"


def _kernel_clients() -> list[str]:
    """Connected nbd devices, NVMe controllers and iSCSI sessions of layerbench's targets."""
    nbd = [p.parent.name for p in Path("/sys/block").glob("nbd*/pid")]
    nvme = [p.parent.name for p in Path("/sys/class/nvme").glob("*/subsysnqn") if "layerbench" in p.read_text()]
    iscsi = [
        p.parent.name for p in Path("/sys/class/iscsi_session").glob("*/targetname") if "layerbench" in p.read_text()
    ]
    return nbd + nvme + iscsi


def _live_commands() -> set[str]:
    """Commands of live processes; a zombie is no resource (this sandbox's init reaps late)."""
    listed = subprocess.run(["ps", "-eo", "stat=,comm="], capture_output=True, text=True, check=True, timeout=60).stdout
    return {line.split()[1] for line in listed.splitlines() if len(line.split()) == 2 and not line.startswith("Z")}
