"""Limits reach the kernel, are read back from the cgroup files and shown: a Docker cell's through its
container, a native cell's through a cgroup of its own (so both run under the same limits).

Runs in `make test` on this host (cgroup v1, no systemd) and, unchanged, inside the test VM (cgroup v2,
systemd as PID 1) in `make test-vm`: the same assertions hold on both, whichever files the kernel keeps.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from layerbench.stack import cgroups
from tests import support
from tests.integration.leftovers import leftovers

pytestmark = [pytest.mark.requires_root, pytest.mark.requires_fio, pytest.mark.requires_docker, pytest.mark.slow]

MiB = 2**20
LIMITS = {"cpuset": "0", "cpus": 1.5, "memory": "256MiB", "read_bps": "64MiB"}
SPEC = {
    "name": "limits",
    "device": {"kind": "loop", "size": "384MiB"},
    "stacks": [
        {"filesystem": "ext4", "engine": "native", "placement": "host-dir", "limits": LIMITS},
        {"filesystem": "ext4", "engine": "docker:overlay2", "placement": "volume", "limits": LIMITS},
    ],
    "workloads": [
        {"name": "RR", "rw": "randread", "bs": "4k", "iodepth": 4, "size": "32MiB", "runtime_s": 1, "ramp_s": 0}
    ],
}


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    return {"db": tmp_path / "results.db", "work": tmp_path / "work", "state": tmp_path / "state"}


def test_limits_are_applied_read_back_and_shown(tmp_path: Path, dirs: dict[str, Path]) -> None:
    spec = tmp_path / "limits.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    done = support.run(["run", str(spec)], dirs)
    assert done.returncode == 0, done.stdout + done.stderr
    shown = json.loads(support.run(["show", "latest", "--json"], dirs).stdout)
    assert len(shown["cells"]) == 2 and all(c["failed"] == 0 for c in shown["cells"])
    assert len(shown["limits"]) == 2
    for limits in shown["limits"]:
        # Passed, not skipped: every limit was read from a cgroup file of this host's version.
        assert limits["status"] == "pass", limits
        assert limits["detail"] == "read back from the cgroup: cpuset=0, cpus=1.5, memory=256MiB, read_bps=64MiB"
    table = support.run(["show", "latest"], dirs).stdout
    assert "read back from the cgroup" in table and "limit-applied" in table
    host = shown["run"]["host"]
    assert host["cgroup"] == cgroups.version() and host["init"]
    assert leftovers(dirs["work"]) == []
