"""`profile: cpu` and seed 001's tunings on file workloads: refused, with the reason, where they cannot be."""

from __future__ import annotations

import dataclasses

import pytest

from layerbench.errors import SpecError
from layerbench.spec import load
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.matrix import expand

SPEC = """
name: p
device: {kind: zram, size: 1GiB}
stacks:
  - {filesystem: ext4, engine: native, placement: host-dir}
  - {filesystem: ext4, engine: "docker:overlay2", placement: volume}
  - {filesystem: ext4, engine: vm, placement: host-dir}
workloads:
  - {name: RR, rw: randread}
baseline: {filesystem: ext4, engine: native, placement: host-dir}
profile: cpu
"""


def reasons(text: str, caps: HostCaps) -> dict[str, str]:
    matrix = expand(load.parse(text), caps)
    return {r.cell.stack.label(): r.reason for r in matrix.refused}


def test_a_guest_is_not_profiled_from_the_host(full_caps: HostCaps) -> None:
    guest = "profile cpu: perf on the host sees a guest only as qemu's threads, not its kernel's frames"
    assert reasons(SPEC, full_caps) == {"zram/ext4/vm/host-dir": guest}


def test_without_perf_every_profiled_cell_is_refused_with_the_install(full_caps: HostCaps) -> None:
    caps = dataclasses.replace(full_caps, profiler_missing="perf is not installed (apt-get install linux-perf)")
    found = reasons(SPEC, caps)
    assert found["zram/ext4/native/host-dir"] == "profile cpu: perf is not installed (apt-get install linux-perf)"
    assert len(found) == 3
    assert reasons(SPEC.replace("profile: cpu", "profile: none"), caps) == {}


def test_a_wrong_profile_names_the_field_and_its_values() -> None:
    with pytest.raises(SpecError, match=r"profile.*'none' or 'cpu'"):
        load.parse(SPEC.replace("profile: cpu", "profile: MEM"))


@pytest.mark.parametrize(
    ("stack", "reason"),
    [
        ("{filesystem: ext4, engine: 'docker:overlay2', placement: volume, tuning: seccomp-unconfined}", None),
        ("{filesystem: ext4, engine: native, placement: host-dir, tuning: seccomp-unconfined}", "use engine docker"),
        ("{filesystem: ext4, engine: 'docker:overlay2', placement: volume, tuning: cpuset}", "set limits.cpuset"),
        ("{filesystem: ext4, engine: 'docker:overlay2', placement: volume, tuning: host-network}", "has none"),
        ("{filesystem: ext4, engine: 'docker:overlay2', placement: volume, tuning: all}", "seccomp-unconfined alone"),
    ],
)
def test_a_file_workloads_container_takes_seccomps_tuning_only(
    full_caps: HostCaps, stack: str, reason: str | None
) -> None:
    text = f"name: t\nstacks:\n  - {stack}\nworkloads:\n  - {{name: RR}}\n"
    refused = expand(load.parse(text), full_caps).refused
    if reason is None:
        assert refused == []
    else:
        assert len(refused) == 1 and reason in refused[0].reason
