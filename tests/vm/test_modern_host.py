"""The modern-host tier: the same tests as on this host, inside a Debian VM with systemd as PID 1 and
cgroup v2 (what most users run), booted once for the module.

The guest mounts this checkout read-only at the same path and runs this very code with its own Python
environment, built into the image from the same requirements.lock (tools/vm/build-image.sh).
Under TCG (no usable KVM) everything is 10-50x slower: the tier proves function, never speed.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from layerbench.stack import vm
from layerbench.stack.capabilities import DEFAULT_CACHE

pytestmark = [pytest.mark.requires_vm, pytest.mark.requires_root, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
# Run inside the guest: each also runs on this host in `make test`.
GUEST_TESTS = (
    "tests/unit/test_cgroups.py",
    "tests/integration/test_limits.py",
    "tests/reliability/test_kill_cleanup.py",
    "tests/integration/test_run_cli.py::test_smoke_run_saves_trials_and_leaves_nothing",
    "tests/integration/test_profile.py::test_a_native_cell_is_profiled_and_its_profilers_leave_nothing",
    # Remote devices over every transport: the guest's kernel has nbd, nvmet/nvme-tcp and LIO/iscsi_tcp.
    "tests/integration/test_remote.py",
    "tests/reliability/test_kill_remote.py",
    # The seeds' rows this host refuses for its kernel: Docker's devicemapper in both modes (dm-thin-pool),
    # seed 000's loop-lvm anomaly flagged by device-accounting, its cleanup after SIGKILL; reiserfs (seed 004).
    "tests/integration/test_devicemapper.py",
    "tests/reliability/test_kill_devicemapper.py",
    "tests/integration/test_reiserfs.py",
    # Seed 000's ext4 pair at high load, on the guest's kernel too.
    "tests/integration/test_layers.py::test_ext4_with_and_without_dioread_nolock_at_high_load",
)
# Where these tests would skip for a missing transport or netem, they fail in the guest (tests/remote_support.py).
EXPECT_REMOTE = "nbd-fio,nbd-fuse,nbd,nvme-tcp,iscsi,netem"
GUEST_TIMEOUT_S = 3600.0
# A test still running after this long has its threads' stacks written to the output: a guest that hangs
# says where, instead of only timing out.
STACK_DUMP_S = 900
GUEST_PYTHON = "/opt/layerbench/venv/bin/python"

SCRIPT = """\
set -u
echo "pid1=$(cat /proc/1/comm)" > /mnt/lbshare/facts
echo "cgroupfs=$(stat -fc %T /sys/fs/cgroup)" >> /mnt/lbshare/facts
echo "kernel=$(uname -r)" >> /mnt/lbshare/facts
echo "boot_s=$(cut -d' ' -f1 /proc/uptime)" >> /mnt/lbshare/facts
cd {repo}
export PYTHONDONTWRITEBYTECODE=1 PYTHONPATH={repo}/src LAYERBENCH_EXPECT_REMOTE={expect_remote}
{python} -m pytest -p no:cacheprovider -q -rs -o faulthandler_timeout={stack_dump_s} \
  --junitxml=/mnt/lbshare/junit.xml {tests}
"""


def _shares() -> list[vm.Share]:
    """The checkout, and the tool cache (IOzone, YCSB) where set-up made one."""
    return [vm.Share(f"lb{i}", p) for i, p in enumerate((REPO, DEFAULT_CACHE)) if p.exists()]


@pytest.fixture(scope="module")
def guest(tmp_path_factory: pytest.TempPathFactory) -> vm.GuestRun:
    image = vm.require(DEFAULT_CACHE)
    script = SCRIPT.format(
        repo=REPO,
        python=GUEST_PYTHON,
        tests=" ".join(GUEST_TESTS),
        expect_remote=EXPECT_REMOTE,
        stack_dump_s=STACK_DUMP_S,
    )
    return vm.run_script(image, script, _shares(), GUEST_TIMEOUT_S, tmp_path_factory.mktemp("vm"))


def _facts(run: vm.GuestRun) -> dict[str, str]:
    lines = run.files.get("facts", "").splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


def test_the_guest_is_a_modern_host(guest: vm.GuestRun) -> None:
    facts = _facts(guest)
    assert facts.get("pid1") == "systemd", guest.console[-3000:]
    assert facts.get("cgroupfs") == "cgroup2fs"


def test_the_same_tests_pass_in_the_guest(guest: vm.GuestRun) -> None:
    assert "junit.xml" in guest.files, f"rc={guest.rc}\n{guest.output[-3000:]}\n{guest.console[-3000:]}"
    cases = ET.fromstring(guest.files["junit.xml"]).iter("testcase")
    outcomes = {f"{c.get('classname')}.{c.get('name')}": _outcome(c) for c in cases}
    # Skipped is not passed: a test that could not see in the guest would prove nothing there.
    assert outcomes and set(outcomes.values()) == {"passed"}, (outcomes, guest.output[-5000:])
    assert guest.rc == 0, guest.output[-3000:]


def _outcome(case: ET.Element) -> str:
    for tag in ("failure", "error", "skipped"):
        if case.find(tag) is not None:
            return tag
    return "passed"
