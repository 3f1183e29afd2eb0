"""Hostile specs: thousands of generated documents, and each is either an
Experiment or a SpecError naming a field, never a traceback."""

from __future__ import annotations

import contextlib

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layerbench.errors import SpecError
from layerbench.spec import load
from layerbench.spec.engines import docker
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.matrix import expand

pytestmark = pytest.mark.reliability

# A host that has everything: every stack and workload goes through the whole expansion and its rules.
EVERYTHING = HostCaps(
    is_root=True,
    kernel="fuzz",
    filesystems=frozenset({"ext4", "xfs", "btrfs", "overlay", "fuse"}),
    mkfs=frozenset({"ext4", "xfs", "btrfs"}),
    loop=True,
    zram=True,
    device_mapper=True,
    fuse=True,
    binaries=frozenset({"fio", "dockerd", "containerd", "runc", "fuse-overlayfs"}),
    servers=frozenset({"postgres", "redis"}),
    clients=frozenset({"ycsb", "pgbench"}),
    engines={
        docker.KIND: docker.DockerCaps(
            drivers=frozenset({"overlay2", "btrfs", "vfs", "fuse-overlayfs", "devicemapper"})
        )
    },
)

KEYS = [
    "name",
    "device",
    "stacks",
    "workloads",
    "baseline",
    "trials",
    "kind",
    "size",
    "path",
    "direct_io",
    "filesystem",
    "engine",
    "placement",
    "limits",
    "type",
    "mkfs_options",
    "mount_options",
    "rw",
    "bs",
    "numjobs",
    "iodepth",
    "runtime_s",
    "ramp_s",
    "precondition",
    "steadystate",
    "job_file",
    "repetitions",
    "precision",
    "read_bps",
    "memory",
    "cpus",
    "cpuset",
    "server",
    "instances",
    "profile",
    "tuning",
    "resources",
    "records",
    "data",
    "same",
    "mix",
    "threads",
    "warmup_s",
    "target_ops",
    "clients",
    "mode",
    "rate",
    "persistence",
    "load_threads",
    "x; rm -rf /",
    "$(reboot)",
]
WORDS = [
    "loop",
    "zram",
    "block",
    "ext4",
    "xfs",
    "btrfs",
    "zfs",
    "docker:overlay2",
    "docker:btrfs",
    "native",
    "raw",
    "volume",
    "bind",
    "tmpfs",
    "randread",
    "4k",
    "1GiB",
    "-1",
    "1e309",
    "",
    "../../etc/passwd",
    "`id`",
    "a" * 300,
    "NaN",
    "docker:",
    ":",
    "\x00",
    "☃",
    "postgres",
    "redis",
    "ycsb",
    "pgbench",
    "MEM",
    "CPU+MEM",
    "host-network",
    "read-heavy",
    "select-only",
    "filesystem",
    "profile",
]

leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.sampled_from(WORDS),
    st.text(max_size=12),
)
documents = st.recursive(
    leaves,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=6)),
    max_leaves=25,
)
plausible = st.fixed_dictionaries(
    {"name": st.sampled_from(["x", "", "q" * 100]), "stacks": documents, "workloads": documents},
    optional={"device": documents, "baseline": documents, "trials": documents},
)


def accepted_or_refused(data: object) -> None:
    try:
        text = yaml.safe_dump(data, allow_unicode=True)
    except yaml.YAMLError:
        return
    try:
        expand(load.parse(text, "fuzz"), EVERYTHING)
    except SpecError as exc:
        assert str(exc).startswith(("fuzz", "spec")), exc  # one message, located


@settings(max_examples=1200, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(plausible)
def test_plausible_specs(data: dict) -> None:
    accepted_or_refused(data)


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(documents)
def test_any_yaml_document(data: object) -> None:
    accepted_or_refused(data)


@settings(max_examples=300, deadline=None, database=None)
@given(st.text(max_size=200))
def test_any_text(text: str) -> None:
    with contextlib.suppress(SpecError):  # refused with a message is right; anything else fails
        load.parse(text, "fuzz")
