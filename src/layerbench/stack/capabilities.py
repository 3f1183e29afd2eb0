"""Probe this host into a HostCaps snapshot for the feasibility rules.

A device node is not proof of a driver: here /dev/mapper/control exists on a
kernel without device-mapper (opening it gives ENODEV), so a character device
counts only if /proc/misc lists its driver or modprobe would load it.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from layerbench.errors import PrerequisiteError, ToolError
from layerbench.proc import Runner
from layerbench.spec.feasibility import DRIVERS_REMOVED, ClusterNode, HostCaps, SwarmNode
from layerbench.stack import image_source
from layerbench.stack import runtimes as oci_runtimes
from layerbench.stack.engines.vm import qemu
from layerbench.stack.remote import needs as remote_needs
from layerbench.stack.target import DEFAULT_CACHE  # beside BuildContext; read here too
from layerbench.workloads import iozone, ycsb
from layerbench.workloads.servers import SERVERS

TOOLS = (
    "fio",
    "dockerd",
    "containerd",
    "runc",
    "fuse-overlayfs",
    "losetup",
    "mount",
    "podman",
    "conmon",
    # The devicemapper driver's: dmsetup removes what a killed dockerd left; direct-lvm's thin pool is LVM's
    # (lvm2), which checks the pool's metadata with thin_check (thin-provisioning-tools) as it activates it.
    "dmsetup",
    "lvcreate",
    "thin_check",
)
MKFS_TYPES = ("ext4", "xfs", "btrfs", "reiserfs")
# Filesystems a layer may need that a kernel often ships as modules (same names as the modules).
MODULE_FILESYSTEMS = ("ext4", "xfs", "btrfs", "reiserfs", "overlay", "aufs", "fuse")
SBIN_DIRS = ("/usr/sbin", "/sbin", "/usr/local/sbin")
ZRAM_HOT_ADD = Path("/sys/class/zram-control/hot_add")

Loadable = Callable[[str], bool]


def probe(
    runner: Runner,
    cache_dir: Path = DEFAULT_CACHE,
    guests: bool = False,
    profiler: Callable[[Runner], str | None] | None = None,
    images: tuple[str, ...] = (),
    kube: bool = False,
    swarm: bool = False,
    docker_hosts: tuple[str, ...] = (),
    runtimes: tuple[str, ...] = (),
) -> HostCaps:
    """What this host offers, read from /proc, /sys, /dev and PATH; nothing is changed.

    With ``guests`` (an experiment with VM cells) it also learns whether KVM runs a guest here, which
    takes a probe boot of the guest's kernel (seconds with KVM, up to a minute without); with ``profiler``
    (an experiment that profiles: ``profiling.perf.missing``), whether perf records the whole machine here;
    for each of ``images`` (image servers' images), whether the engines can have it (a registry they reach,
    or a file); with
    ``kube`` (kubernetes cells), the cluster's nodes (the kubeconfig of $KUBECONFIG: `--kubeconfig`); with
    ``swarm`` (swarm cells), the swarm's nodes (the manager of $LAYERBENCH_SWARM_MANAGER: `--swarm-manager`);
    for each of ``docker_hosts`` (docker-host cells' URLs), whether a Docker daemon answers there; for each
    of ``runtimes`` (OCI runtimes cells name), whether it runs a container here (a probe container)."""
    kernel = platform.release()
    notes: list[str] = []
    loadable = _module_prober(runner, kernel, notes)
    listed = _proc_filesystems()
    filesystems = frozenset(listed | {fs for fs in MODULE_FILESYSTEMS if fs not in listed and loadable(fs)})
    misc = _proc_misc()
    binaries = _on_path(TOOLS, notes)
    fuse = _char_driver(Path("/dev/fuse"), "fuse", "fuse", misc, loadable, notes)
    device_mapper = _char_driver(Path("/dev/mapper/control"), "device-mapper", "dm_mod", misc, loadable, notes)
    dm_thin = device_mapper and dm_target("dm_thin_pool", loadable)
    drivers = docker_drivers(filesystems, binaries, fuse, device_mapper and dm_thin)
    dockerd_major = _dockerd_major(runner, binaries)
    return HostCaps(
        is_root=os.geteuid() == 0,
        kernel=kernel,
        filesystems=filesystems,
        mkfs=frozenset(fs for fs in MKFS_TYPES if _on_path((f"mkfs.{fs}",), notes)),
        loop=_char_driver(Path("/dev/loop-control"), "loop-control", "loop", misc, loadable, notes),
        zram=ZRAM_HOT_ADD.exists() or loadable("zram"),
        device_mapper=device_mapper,
        dm_thin=dm_thin,
        dockerd_major=dockerd_major,
        fuse=fuse,
        binaries=binaries,
        docker_drivers=_drop_removed(drivers, dockerd_major, notes),
        podman_drivers=podman_drivers(filesystems, binaries),
        notes=tuple(notes),
        servers=database_servers(notes, cache_dir),
        clients=clients(cache_dir, notes),
        remote=remote_needs.probe(runner, loadable),
        images={image: image_source.missing(image) for image in images},
        **(guest_caps(cache_dir) if guests else {}),
        **({"profiler_missing": profiler(runner)} if profiler else {}),
        **(_kube() if kube else {}),
        **({"swarm": _swarm_nodes()} if swarm else {}),
        docker_hosts={url: _docker_host(url) for url in docker_hosts},
        runtimes={name: oci_runtimes.probe(name, runner) for name in runtimes},
    )


def _kube() -> dict[str, dict[str, ClusterNode] | str | frozenset[str]]:
    from layerbench.stack.engines.kubernetes import (
        kube_api,  # the Kubernetes client is imported only where a cell needs it
    )

    config = kube_api.kubeconfig()
    return {"kube": kube_api.cluster_nodes(config), "kube_classes": kube_api.storage_classes(config)}


def _swarm_nodes() -> dict[str, SwarmNode] | str:
    from layerbench.stack.engines.swarm import swarm_api

    return swarm_api.swarm_nodes(swarm_api.manager_url())


def _docker_host(url: str) -> str | None:
    from layerbench.stack.engines.docker_host import (
        host_api,  # the Docker SDK is asked only where a cell names a daemon
    )

    return host_api.answers(url)


def guest_caps(cache_dir: Path) -> dict[str, str | None]:
    """Whether a guest can boot here (qemu, the image), and under which accelerator."""
    reason = qemu.missing(cache_dir)
    if reason is not None:
        return {"vm_missing": reason, "vm_accel": None}
    with tempfile.TemporaryDirectory(prefix="layerbench-kvm-") as tmp:
        return {"vm_missing": None, "vm_accel": qemu.accel_for(qemu.require(cache_dir), Path(tmp))}


def database_servers(notes: list[str], cache_dir: Path = DEFAULT_CACHE) -> frozenset[str]:
    """The servers whose binaries this host has (each definition finds its own; Cassandra and FerretDB in the cache)."""
    found = set()
    for kind, definition in SERVERS.items():
        try:
            definition.binaries(cache_dir)
        except PrerequisiteError as exc:
            notes.append(f"{kind}: {exc}")
            continue
        found.add(kind)
    return frozenset(found)


def clients(cache_dir: Path, notes: list[str]) -> frozenset[str]:
    """The workload tools beyond fio that are ready: pgbench on PATH, YCSB and IOzone in the cache."""
    found = {"pgbench"} if shutil.which("pgbench") else set()
    for name, missing in (("ycsb", ycsb.missing(cache_dir)), ("iozone", iozone.missing(cache_dir))):
        if missing:
            notes.append(f"{name}: {missing}")
        else:
            found.add(name)
    return frozenset(found)


def dm_target(module: str, loadable: Loadable, sys_module: Path = Path("/sys/module")) -> bool:
    """A device-mapper target: loaded or built in (its parameters are in /sys/module), or loadable."""
    return (sys_module / module).is_dir() or loadable(module)


def docker_drivers(filesystems: frozenset[str], binaries: frozenset[str], fuse: bool, dm: bool) -> frozenset[str]:
    """The storage drivers whose kernel and tool needs this host meets (``dm``: device-mapper and its thin pool)."""
    needs = {
        "overlay2": "overlay" in filesystems,
        "btrfs": "btrfs" in filesystems,
        "vfs": "dockerd" in binaries,
        "fuse-overlayfs": fuse and "fuse-overlayfs" in binaries,
        "devicemapper": dm,
        "aufs": "aufs" in filesystems,
    }
    return frozenset(driver for driver, met in needs.items() if met)


def podman_drivers(filesystems: frozenset[str], binaries: frozenset[str]) -> frozenset[str]:
    """Podman's storage drivers whose kernel needs this host meets (none without podman)."""
    if "podman" not in binaries:
        return frozenset()
    needs = {"overlay": "overlay" in filesystems, "vfs": True, "btrfs": "btrfs" in filesystems}
    return frozenset(driver for driver, met in needs.items() if met)


def _drop_removed(drivers: frozenset[str], major: int | None, notes: list[str]) -> frozenset[str]:
    if major is None:
        return drivers
    gone = {d for d, since in DRIVERS_REMOVED if d in drivers and major >= since}
    notes.extend(f"dockerd {major}.x no longer has the {d} storage driver" for d in sorted(gone))
    return drivers - gone


def _dockerd_major(runner: Runner, binaries: frozenset[str]) -> int | None:
    if "dockerd" not in binaries:
        return None
    try:
        out = runner(["dockerd", "--version"], timeout=30).stdout
    except ToolError:  # a broken install: the engine layer reports it when it starts one
        return None
    found = re.search(r"version (\d+)\.", out)
    return int(found.group(1)) if found else None


def _module_prober(runner: Runner, kernel: str, notes: list[str]) -> Loadable:
    """A test for "modprobe would load this module" (a dry run: nothing is loaded)."""
    if not Path(f"/lib/modules/{kernel}").is_dir():
        notes.append(f"no /lib/modules/{kernel}: only what the kernel has built in or loaded is usable")
        return lambda module: False
    if shutil.which("modprobe") is None:
        notes.append("modprobe is not on PATH: kernel modules not loaded yet are not counted")
        return lambda module: False

    def loadable(module: str) -> bool:
        try:
            return runner(["modprobe", "--dry-run", "--quiet", module], timeout=10).rc == 0
        except ToolError:  # timed out: treat as absent, the feasibility rules then say why
            return False

    return loadable


def _char_driver(node: Path, misc_name: str, module: str, misc: set[str], loadable: Loadable, notes: list[str]) -> bool:
    if not node.exists():
        return False
    if misc_name in misc or loadable(module):
        return True
    notes.append(f"{node} exists but the kernel has no {misc_name} driver (not in /proc/misc, no {module} module)")
    return False


def _on_path(names: tuple[str, ...], notes: list[str]) -> frozenset[str]:
    found = set()
    for name in names:
        if shutil.which(name):
            found.add(name)
            continue
        elsewhere = next((d for d in SBIN_DIRS if os.access(os.path.join(d, name), os.X_OK)), None)
        if elsewhere:
            notes.append(f"{name} is in {elsewhere}, which is not on PATH: add it to PATH to use {name}")
    return frozenset(found)


def _proc_filesystems() -> set[str]:
    return {line.split()[-1] for line in _read("/proc/filesystems").splitlines() if line.split()}


def _proc_misc() -> set[str]:
    return {line.split()[1] for line in _read("/proc/misc").splitlines() if len(line.split()) == 2}


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:  # no /proc (a chroot): the probe then reports nothing usable from it
        return ""
