"""The modern-host tier: what only a host with systemd as PID 1, cgroup v2 and every kernel module can
prove, in a Debian VM booted once for the module (docs/testing.md).

The guest runs tests/vm/guest_run.py on this checkout (shared read-only, its own Python environment
from the same requirements.lock): one `layerbench run` whose stacks are each a kernel path this host
lacks, killed with SIGKILL at two of them, cleaned up and resumed. Each test below judges one path from
what the guest returned. Under TCG (no usable KVM) everything is 10-50x slower: function, never speed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from layerbench.stack.capabilities import DEFAULT_CACHE
from layerbench.stack.engines.vm import qemu
from tests.integration.test_devicemapper import DIRECT, DIRECT_LVM, LOOP_LVM
from tests.integration.test_devicemapper import SPEC as DEVICEMAPPER

REPO = Path(__file__).resolve().parents[2]
LIMITS = {"cpuset": "0", "cpus": 1.5, "memory": "256MiB", "read_bps": "64MiB"}
# nbd behind netem's delay (the kernel's netem: this host has none); the others behind a rate limit.
REMOTES = {
    "nbd": {"transport": "nbd", "link": {"delay": "2ms"}},
    "nvme-tcp": {"transport": "nvme-tcp", "link": {"rate": "10gbit"}},
    "iscsi": {"transport": "iscsi", "link": {"rate": "10gbit"}},
}
SPEC: dict[str, Any] = {
    "name": "modern-host",
    "device": {"kind": "zram", "size": "1GiB"},
    "stacks": [
        # cgroup v2 under systemd: a container's limits and a native cell's own cgroup.
        {"filesystem": "ext4", "engine": "native", "placement": "host-dir", "limits": LIMITS},
        {"filesystem": "ext4", "engine": "docker:overlay2", "placement": "volume", "limits": LIMITS},
        # crun, the OCI runtime for cgroup v2 hosts (it refuses this project's hybrid-cgroup host).
        {"filesystem": "ext4", "engine": {"kind": "docker", "runtime": "crun"}, "placement": "volume"},
        # Docker's devicemapper in both modes (dm-thin-pool): seed 000's loop-lvm anomaly.
        {"filesystem": "ext4", "engine": ["docker:devicemapper", DIRECT_LVM], "placement": "writable-layer"},
        # reiserfs (seed 004).
        {"filesystem": "reiserfs", "engine": "native", "placement": "host-dir"},
        # Remote devices over each kernel transport, against their local twin.
        {
            "device": [{"remote": None}, *({"remote": r} for r in REMOTES.values())],
            "filesystem": "none",
            "placement": "raw",
        },
    ],
    # Seed 000's RR-L, one untimed pass at QD1 with O_DIRECT, as the host's devicemapper test has it, over
    # 20 MiB instead of 32: still above device-accounting's 16 MiB floor, and 5,120 reads instead of 8,192
    # for nbd behind netem's 2 ms each way (59 s of the guest's run with 32 MiB).
    "workloads": [{**w, "size": "20MiB"} for w in DEVICEMAPPER["workloads"]],
    "baseline": {"same": ["filesystem", "engine", "placement"]},
    "trials": {"repetitions": 1},
}
REMOTE_LABELS = {
    "nbd": "zram@nbd(+2ms)/none/native/raw",
    "nvme-tcp": "zram@nvme-tcp(10gbit)/none/native/raw",
    "iscsi": "zram@iscsi(10gbit)/none/native/raw",
}
# The guest's share of the tier's budget (Makefile's BUDGET_VM): its boot, one run with two kills,
# cleanups and resumes (guest_run.py bounds each step), and its power-off.
GUEST_TIMEOUT_S = 1200.0
GUEST_PYTHON = "/opt/layerbench/venv/bin/python"

pytestmark = [
    pytest.mark.requires_vm,
    pytest.mark.requires_root,
    pytest.mark.slow,
    # The module's guest runs in its first test's set-up, so that test's deadline covers the whole guest.
    pytest.mark.timeout(GUEST_TIMEOUT_S + 120),
]

SCRIPT = """\
set -u
echo "pid1=$(cat /proc/1/comm)" > /mnt/lbshare/facts
echo "cgroupfs=$(stat -fc %T /sys/fs/cgroup)" >> /mnt/lbshare/facts
echo "kernel=$(uname -r)" >> /mnt/lbshare/facts
echo "boot_s=$(cut -d' ' -f1 /proc/uptime)" >> /mnt/lbshare/facts
cd {repo}
export PYTHONDONTWRITEBYTECODE=1 PYTHONPATH={repo}/src:{repo}
{python} tests/vm/guest_run.py /mnt/lbshare/spec.json /mnt/lbshare
echo "run_s=$(cut -d' ' -f1 /proc/uptime)" >> /mnt/lbshare/facts
"""


def _shares() -> list[qemu.Share]:
    """The checkout, and the tool cache (IOzone, YCSB) where set-up made one."""
    return [qemu.Share(f"lb{i}", p) for i, p in enumerate((REPO, DEFAULT_CACHE)) if p.exists()]


@pytest.fixture(scope="module")
def guest(tmp_path_factory: pytest.TempPathFactory) -> qemu.GuestRun:
    script = SCRIPT.format(repo=REPO, python=GUEST_PYTHON)
    # The spec reaches the guest inside its script: a heredoc writes it to the share before the run.
    script = f"cat > /mnt/lbshare/spec.json <<'EOF'\n{json.dumps(SPEC)}\nEOF\n" + script
    return qemu.run_script(
        qemu.require(DEFAULT_CACHE), script, _shares(), GUEST_TIMEOUT_S, tmp_path_factory.mktemp("vm")
    )


@pytest.fixture(scope="module")
def result(guest: qemu.GuestRun) -> dict[str, Any]:
    assert "result.json" in guest.files, f"rc={guest.rc}\n{guest.output[-3000:]}\n{guest.console[-3000:]}"
    found = json.loads(guest.files["result.json"])
    print(f"guest: {_facts(guest)}; steps (s from the run's start): {found.get('timeline')}")  # with -s
    began = found.get("began_wall", 0.0)
    ended = sorted((round(t["ended_at"] - began, 1), t["label"]) for t in found["trials"] if t.get("ended_at"))
    print(f"trials ended (s): {ended}\nresources (kind, what, made, removed; s): {found.get('resources')}")
    return found


@pytest.fixture(scope="module")
def by_label(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["label"]: t for t in result["trials"]}


def _facts(run: qemu.GuestRun) -> dict[str, str]:
    lines = run.files.get("facts", "").splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


def test_the_guest_is_a_modern_host(guest: qemu.GuestRun) -> None:
    facts = _facts(guest)
    assert facts.get("pid1") == "systemd", guest.console[-3000:]
    assert facts.get("cgroupfs") == "cgroup2fs"


def test_the_run_finishes_every_cell_once_and_leaves_nothing(result: dict[str, Any]) -> None:
    assert result["last"]["rc"] == 0, result["last"]["output"]
    assert result["show"]["run"]["status"] == "finished", result["show"]
    labels = [t["label"] for t in result["trials"]]
    assert len(labels) == len(set(labels)) == 10, labels  # none lost, none repeated by a resume
    failed = [(t["label"], t["stderr"]) for t in result["trials"] if t["status"] != "ok"]
    assert failed == []
    assert result["live_after"] == [] and result["left_after"] == []


@pytest.mark.parametrize("path", ["devicemapper", "nvme-tcp"])
def test_a_sigkill_leaves_the_kernels_resources_and_cleanup_removes_them(result: dict[str, Any], path: str) -> None:
    assert path not in result["never_reached"], result["never_reached"]
    [killed] = [k for k in result["kills"] if k["path"] == path]
    assert killed["left"], "a SIGKILL leaves its resources behind: nothing would be tested"
    if path == "devicemapper":
        assert any(item.startswith("device-mapper device") for item in killed["left"]), killed["left"]
    assert killed["cleanup"]["rc"] == 0, killed["cleanup"]["output"]
    assert killed["cleanup"]["live"] == [] and killed["left_after_cleanup"] == []


def test_limits_apply_and_read_back_under_cgroup_v2(result: dict[str, Any]) -> None:
    limits = result["show"]["limits"]
    assert len(limits) == 2, limits  # the native cell's own cgroup and the container's
    for entry in limits:
        # Passed, not skipped: every limit was read from a cgroup v2 file.
        assert entry["status"] == "pass", entry
        assert entry["detail"] == "read back from the cgroup: cpuset=0, cpus=1.5, memory=256MiB, read_bps=64MiB"
    assert result["show"]["run"]["host"]["cgroup"] == 2


def test_loop_lvm_reads_the_page_cache_and_is_flagged_direct_lvm_passes(by_label: dict[str, Any]) -> None:
    loop, direct = by_label[LOOP_LVM], by_label[DIRECT]
    loop_status = dict(loop["info"]["target"].get("driver_status") or [])
    direct_status = dict(direct["info"]["target"].get("driver_status") or [])
    # Which mode each daemon ran, in its own words: loop-lvm's pool sits on loop files in its data-root,
    # direct-lvm's is the LVM thin pool layerbench built, with deferred removal.
    assert "Data loop file" in loop_status and "Data loop file" not in direct_status, (loop_status, direct_status)
    assert direct_status.get("Pool Name", "").endswith("-pool"), direct_status
    assert direct_status.get("Deferred Removal Enabled") == "true", direct_status
    # The anomaly, caught; and the honest mode on the same device, not.
    assert loop["checks"]["device-accounting"][0] == "flag", loop["checks"]
    assert direct["checks"]["device-accounting"][0] == "pass", direct["checks"]


def test_crun_runs_a_container_on_a_cgroup_v2_host(by_label: dict[str, Any], result: dict[str, Any]) -> None:
    label = "zram/ext4/docker:overlay2+crun/volume"
    assert label in by_label, result["show"].get("refused")  # refused: the probe's words say why
    crun = by_label[label]
    assert crun["status"] == "ok", crun["stderr"]
    runtime = crun["info"]["target"]["runtime"]
    assert runtime["name"] == "crun" and runtime["version"].startswith("crun version"), runtime


def test_reiserfs_runs_natively(by_label: dict[str, Any], result: dict[str, Any]) -> None:
    assert by_label["zram/reiserfs/native/host-dir"]["status"] == "ok"
    [cell] = [c for c in result["show"]["cells"] if c["stack_label"] == "zram/reiserfs/native/host-dir"]
    assert cell["summary"]["n"] == 1 and cell["summary"]["mean"] > 0, cell


@pytest.mark.parametrize("transport", list(REMOTES))
def test_each_kernel_transport_reaches_the_export_and_is_compared_with_its_local_twin(
    result: dict[str, Any], transport: str
) -> None:
    label = REMOTE_LABELS[transport]
    [cell] = [c for c in result["show"]["cells"] if c["stack_label"] == label]
    assert cell["summary"]["n"] == 1
    # Direct I/O on zram end to end: the device under the stack saw fio's bytes.
    assert not [f for f in cell["flags"] if f["name"] == "device-accounting"], cell["flags"]
    [added] = [r for r in result["show"]["remote_latency"] if r["stack_label"] == label]
    assert added["baseline_label"] == "zram/none/native/raw", added
    # Every 4k read crosses TCP; a local zram read is a memory copy.
    assert added["remote_us"]["clat"] > added["local_us"]["clat"], added


def test_netem_delays_each_direction(result: dict[str, Any]) -> None:
    [added] = [r for r in result["show"]["remote_latency"] if r["stack_label"] == REMOTE_LABELS["nbd"]]
    assert added["added_us"]["lat"] >= 2 * 2000 * 0.98, added  # 2 ms out, 2 ms back; netem never delays less
