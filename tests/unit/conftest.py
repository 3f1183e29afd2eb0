from __future__ import annotations

import pytest

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
        docker_drivers=frozenset({"overlay2", "btrfs", "vfs", "fuse-overlayfs"}),
        podman_drivers=frozenset({"overlay", "vfs", "btrfs"}),
        servers=frozenset({"postgres", "redis", "cassandra"}),
        clients=frozenset({"ycsb", "pgbench"}),
        vm_accel="kvm",
        vm_missing=None,
        profiler_missing=None,
    )
