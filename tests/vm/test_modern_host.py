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

REPO = Path(__file__).resolve().parents[2]
# Run inside the guest: only what a cgroup-v2, systemd, kernel-module host can prove, one test per kernel
# path (docs/testing.md). Each also runs, or is refused with its reason, on this host in `make test`.
# Left to the host tier: pure unit tests (the cgroup v2 reader has its files captured from this guest),
# the profiler (perf is no cgroup or module path), user-space transports (nbd-fuse, fio's nbd engine),
# and the variants of one kernel path (each transport's SIGKILL and cleanup but one, each devicemapper
# mode's but one).
REMOTE = "tests/integration/test_remote.py::test_remote_cells_run_against_their_local_twins_and_leave_nothing"
GUEST_TESTS = (
    # cgroup v2 under systemd: limits applied and read back; a whole run, and a SIGKILL's cleanup.
    "tests/integration/test_limits.py",
    "tests/integration/test_run_cli.py::test_smoke_run_saves_trials_and_leaves_nothing",
    # Remote devices over each kernel transport (nbd, nvmet/nvme-tcp, LIO/iscsi_tcp) and netem's delay.
    f"{REMOTE}[nbd]",
    f"{REMOTE}[nvme-tcp]",
    f"{REMOTE}[iscsi]",
    "tests/integration/test_remote.py::test_a_delayed_link_adds_its_round_trip",
    "tests/reliability/test_kill_remote.py::test_sigkill_with_a_remote_device_attached_then_cleanup[nvme-tcp]",
    # The seeds' rows this host refuses for its kernel: Docker's devicemapper in both modes (dm-thin-pool),
    # seed 000's loop-lvm anomaly flagged by device-accounting, and a SIGKILL's cleanup of its devices;
    # reiserfs (seed 004); seed 000's ext4 pair (nodioread_nolock).
    "tests/integration/test_devicemapper.py",
    "tests/reliability/test_kill_devicemapper.py::test_sigkill_with_a_devicemapper_container_up_then_cleanup[direct-lvm]",
    "tests/integration/test_reiserfs.py",
    "tests/integration/test_layers.py::test_ext4_with_and_without_dioread_nolock_at_high_load",
)
# Where these tests would skip for a missing transport or netem, they fail in the guest (tests/remote_support.py).
EXPECT_REMOTE = "nbd,nvme-tcp,iscsi,netem"
# The guest's share of the tier's budget (Makefile's BUDGET_VM). Under emulation everything runs 10-50x
# slower than on this host, so each guest test's deadline is GUEST_TEST_TIMEOUT_S, not the host's 300 s;
# no test starts after GUEST_SESSION_S (pytest-timeout's session timeout: the guest still writes its
# junit.xml, naming what did not run); the boot and the power-off get GUEST_BOOT_S.
GUEST_TEST_TIMEOUT_S = 420
GUEST_SESSION_S = 720
GUEST_BOOT_S = 240
GUEST_TIMEOUT_S = GUEST_SESSION_S + GUEST_TEST_TIMEOUT_S + GUEST_BOOT_S

pytestmark = [
    pytest.mark.requires_vm,
    pytest.mark.requires_root,
    pytest.mark.slow,
    # The module's guest boots in its first test's set-up, so that test's deadline covers the whole guest.
    pytest.mark.timeout(GUEST_TIMEOUT_S + 120),
]
GUEST_PYTHON = "/opt/layerbench/venv/bin/python"

SCRIPT = """\
set -u
echo "pid1=$(cat /proc/1/comm)" > /mnt/lbshare/facts
echo "cgroupfs=$(stat -fc %T /sys/fs/cgroup)" >> /mnt/lbshare/facts
echo "kernel=$(uname -r)" >> /mnt/lbshare/facts
echo "boot_s=$(cut -d' ' -f1 /proc/uptime)" >> /mnt/lbshare/facts
cd {repo}
export PYTHONDONTWRITEBYTECODE=1 PYTHONPATH={repo}/src LAYERBENCH_EXPECT_REMOTE={expect_remote}
{python} -m pytest -p no:cacheprovider -q -rs -o timeout={test_timeout_s} --session-timeout={session_s} \
  --durations=0 --junitxml=/mnt/lbshare/junit.xml {tests}
"""


def _shares() -> list[vm.Share]:
    """The checkout, and the tool cache (IOzone, YCSB) where set-up made one."""
    return [vm.Share(f"lb{i}", p) for i, p in enumerate((REPO, DEFAULT_CACHE)) if p.exists()]


@pytest.fixture(scope="module")
def guest(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> vm.GuestRun:
    image = vm.require(DEFAULT_CACHE)
    script = SCRIPT.format(
        repo=REPO,
        python=GUEST_PYTHON,
        tests=" ".join(GUEST_TESTS),
        expect_remote=EXPECT_REMOTE,
        test_timeout_s=GUEST_TEST_TIMEOUT_S,
        session_s=GUEST_SESSION_S,
    )
    run = vm.run_script(image, script, _shares(), GUEST_TIMEOUT_S, tmp_path_factory.mktemp("vm"))
    _report_times(request.config, run)
    return run


def _report_times(config: pytest.Config, run: vm.GuestRun) -> None:
    """The guest's time, and each guest test's, on the terminal: where the tier's budget goes."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is None:
        return
    terminal.write_line(f"\nthe guest ran {run.seconds:.0f} s ({run.accel}); its tests, slowest first:")
    cases = ET.fromstring(run.files["junit.xml"]).iter("testcase") if "junit.xml" in run.files else []
    for case in sorted(cases, key=lambda c: -float(c.get("time") or 0)):
        terminal.write_line(f"  {float(case.get('time') or 0):7.1f} s  {case.get('classname')}::{case.get('name')}")


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
