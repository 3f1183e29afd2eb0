"""Probe this host into a HostCaps snapshot for the feasibility rules."""

from __future__ import annotations

import os
import platform
import shutil
from pathlib import Path

from layerbench.errors import ToolError
from layerbench.proc import Runner
from layerbench.spec.feasibility import HostCaps

TOOLS = ("fio", "dockerd", "containerd", "runc", "fuse-overlayfs", "losetup", "mount")
FILESYSTEMS = ("ext4", "xfs", "btrfs", "reiserfs", "overlay", "aufs", "fuse")


def probe(runner: Runner) -> HostCaps:
    kernel = platform.release()
    listed = _proc_filesystems()
    usable = frozenset(fs for fs in FILESYSTEMS if fs in listed or _loadable(runner, fs, kernel))
    binaries = frozenset(t for t in TOOLS if shutil.which(t))
    fuse = Path("/dev/fuse").exists()
    dm = Path("/dev/mapper/control").exists() or _loadable(runner, "dm_mod", kernel)
    caps = HostCaps(
        is_root=os.geteuid() == 0,
        kernel=kernel,
        filesystems=usable,
        mkfs=frozenset(fs for fs in ("ext4", "xfs", "btrfs", "reiserfs") if shutil.which(f"mkfs.{fs}")),
        loop=Path("/dev/loop-control").exists(),
        zram=Path("/sys/class/zram-control/hot_add").exists() or _loadable(runner, "zram", kernel),
        device_mapper=dm,
        fuse=fuse,
        binaries=binaries,
        docker_drivers=frozenset(),
    )
    return _with_drivers(caps)


def _with_drivers(caps: HostCaps) -> HostCaps:
    drivers = {"vfs"} if "dockerd" in caps.binaries else set()
    if "dockerd" in caps.binaries:
        if "overlay" in caps.filesystems:
            drivers.add("overlay2")
        if "btrfs" in caps.filesystems:
            drivers.add("btrfs")
        if caps.fuse and "fuse-overlayfs" in caps.binaries:
            drivers.add("fuse-overlayfs")
        if caps.device_mapper:
            drivers.add("devicemapper")
        if "aufs" in caps.filesystems:
            drivers.add("aufs")
    return HostCaps(**{**caps.__dict__, "docker_drivers": frozenset(drivers)})


def _proc_filesystems() -> set[str]:
    try:
        text = Path("/proc/filesystems").read_text()
    except OSError:
        return set()
    return {line.split()[-1] for line in text.splitlines() if line.split()}


def _loadable(runner: Runner, module: str, kernel: str) -> bool:
    """Would `modprobe` find the module? (dry run: nothing is loaded)."""
    if not shutil.which("modprobe") or not Path(f"/lib/modules/{kernel}").exists():
        return False
    try:
        return runner(["modprobe", "-n", module], timeout=10).rc == 0
    except ToolError:
        return False
