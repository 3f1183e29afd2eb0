from __future__ import annotations

import pytest

from layerbench.spec.engines import docker, podman, vm
from layerbench.spec.feasibility import HostCaps


@pytest.fixture
def full_caps() -> HostCaps:
    """A host that has everything this project can use (like the CI machine, minus device-mapper)."""
    return HostCaps(
        is_root=True,
        kernel="6.18.0-test",
        filesystems=frozenset({"ext4", "xfs", "btrfs", "overlay", "tmpfs", "fuse"}),
        mkfs=frozenset({"ext4", "xfs", "btrfs"}),
        loop=True,
        zram=True,
        device_mapper=False,
        fuse=True,
        binaries=frozenset(
            {"fio", "dockerd", "containerd", "runc", "fuse-overlayfs", "losetup", "mount", "podman", "conmon"}
        ),
        servers=frozenset({"postgres", "redis", "cassandra"}),
        clients=frozenset({"ycsb", "pgbench"}),
        profiler_missing=None,
        engines={
            docker.KIND: docker.DockerCaps(drivers=frozenset({"overlay2", "btrfs", "vfs", "fuse-overlayfs"})),
            podman.KIND: podman.PodmanCaps(drivers=frozenset({"overlay", "vfs", "btrfs"})),
            vm.KIND: vm.GuestCaps(accel="kvm", missing=None),
        },
    )
