"""tools/with-policy-rc.sh, which `make apt-db` and `make apt-k8s` wrap their installs in: services do not
start while the command runs, and the policy-rc.d is gone on every way out, unless it was there before
(kept, and said). Run against a file in a temporary directory (POLICY_RC_D), with a stand-in for apt-get
(each case well under a second)."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "tools" / "with-policy-rc.sh"
OURS = "#!/bin/sh\nexit 101\n"


def run(policy: Path, *command: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "POLICY_RC_D": str(policy)}
    return subprocess.run([str(SCRIPT), *command], env=env, capture_output=True, text=True, timeout=30)


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    return tmp_path / "policy-rc.d"


def test_services_are_refused_during_the_command_and_the_file_goes_after(policy: Path) -> None:
    done = run(policy, "sh", "-c", '"$POLICY_RC_D"; echo "policy said $?"')
    assert done.returncode == 0 and done.stdout == "policy said 101\n" and done.stderr == ""
    assert not policy.exists()


def test_a_failed_command_removes_it_and_keeps_the_exit_code(policy: Path) -> None:
    assert run(policy, "sh", "-c", "exit 100").returncode == 100
    assert not policy.exists()


@pytest.mark.parametrize(("sig", "rc"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, -signal.SIGINT)])
def test_an_interrupted_install_removes_it(policy: Path, sig: signal.Signals, rc: int) -> None:
    # The stand-in signals the script (its parent) and returns: the trap runs once it has.
    done = run(policy, "sh", "-c", f'test -x "$POLICY_RC_D" && kill -{sig.name[3:]} $PPID')
    assert done.returncode == rc, done.stderr
    assert not policy.exists()


def test_one_there_before_is_kept_and_reported(policy: Path) -> None:
    policy.write_text("#!/bin/sh\nexit 0\n")
    done = run(policy, "true")
    assert done.returncode == 0 and "was already there; kept as it is" in done.stderr
    assert policy.read_text() == "#!/bin/sh\nexit 0\n"


def test_one_an_interrupted_install_left_is_named_as_such(policy: Path) -> None:
    policy.write_text(OURS)
    done = run(policy, "true")
    assert "an earlier, interrupted install left" in done.stderr and f"rm {policy}" in done.stderr
    assert policy.read_text() == OURS


def test_the_makefiles_service_free_installs_go_through_it() -> None:
    makefile = (SCRIPT.parents[1] / "Makefile").read_text()
    for target in ("apt-db", "apt-k8s"):
        recipe = makefile.split(f"\n{target}:", 1)[1].split("\n\n", 1)[0]
        assert "tools/with-policy-rc.sh sh -c 'apt-get update" in recipe, target
    assert "policy-rc.d" not in makefile.replace("tools/with-policy-rc.sh", "").replace("a policy-rc.d", "")
