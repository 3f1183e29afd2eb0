"""The host probe: sane on this machine, plain frozen data."""

from __future__ import annotations

import dataclasses
import os
import platform
import shutil
from pathlib import Path
from typing import get_args

import pytest

from layerbench import proc
from layerbench.spec.engines import docker
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.models import Driver
from layerbench.stack.capabilities import TOOLS, dm_target, probe
from layerbench.stack.engines.docker import docker_drivers


@pytest.fixture(scope="module")
def caps() -> HostCaps:
    return probe(proc.run)


def test_probe_describes_this_host(caps: HostCaps) -> None:
    assert caps.is_root == (os.geteuid() == 0)
    assert caps.kernel == platform.release()
    listed = {line.split()[-1] for line in Path("/proc/filesystems").read_text().splitlines() if line.split()}
    assert listed <= caps.filesystems
    assert caps.binaries == {t for t in TOOLS if shutil.which(t)}
    assert caps.mkfs == {fs for fs in ("ext4", "xfs", "btrfs", "reiserfs") if shutil.which(f"mkfs.{fs}")}
    assert not caps.loop or Path("/dev/loop-control").exists()
    assert not caps.fuse or Path("/dev/fuse").exists()
    if Path("/sys/class/zram-control/hot_add").exists():
        assert caps.zram
    drivers = docker.of(caps).drivers
    assert drivers <= set(get_args(Driver))
    assert ("vfs" in drivers) == ("dockerd" in caps.binaries)
    assert caps.device_mapper or not caps.dm_thin  # no thin pool without device-mapper
    assert ("devicemapper" in drivers) <= caps.dm_thin
    assert all(isinstance(n, str) and n for n in caps.notes)


def test_host_caps_is_frozen(caps: HostCaps) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        caps.is_root = not caps.is_root  # type: ignore[misc]
    assert hash(caps.filesystems) == hash(frozenset(caps.filesystems))


def test_drivers_follow_kernel_and_tools() -> None:
    drivers = docker_drivers(frozenset({"overlay", "xfs"}), frozenset({"fuse-overlayfs"}), fuse=True, dm=False)
    assert drivers == {"overlay2", "fuse-overlayfs"}
    assert docker_drivers(frozenset({"btrfs", "aufs"}), frozenset({"dockerd"}), fuse=False, dm=True) == {
        "btrfs",
        "aufs",
        "vfs",
        "devicemapper",
    }


def test_new_dockerd_loses_removed_drivers() -> None:
    runner = proc.FakeRunner({"dockerd": (0, "Docker version 26.1.4, build 5650f9b\n", "")})
    caps = probe(runner)
    assert "devicemapper" not in docker.of(caps).drivers and "aufs" not in docker.of(caps).drivers
    if "dockerd" in caps.binaries:
        assert ["dockerd", "--version"] in runner.calls


def test_a_device_mapper_target_counts_loaded_built_in_or_loadable(tmp_path: Path) -> None:
    (tmp_path / "dm_thin_pool").mkdir()  # /sys/module/<name>: loaded, or built in with parameters
    assert dm_target("dm_thin_pool", lambda module: False, tmp_path)
    assert not dm_target("dm_cache", lambda module: False, tmp_path)
    assert dm_target("dm_cache", lambda module: module == "dm_cache", tmp_path)


def test_the_dockerd_version_is_kept_for_the_reason() -> None:
    caps = probe(proc.FakeRunner({"dockerd": (0, "Docker version 26.1.4, build 5650f9b\n", "")}))
    assert docker.of(caps).dockerd_major == (26 if "dockerd" in caps.binaries else None)
