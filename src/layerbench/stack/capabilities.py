"""Probe this host into a HostCaps snapshot for the feasibility rules.

A device node is not proof of a driver: here /dev/mapper/control exists on a
kernel without device-mapper (opening it gives ENODEV), so a character device
counts only if /proc/misc lists its driver or modprobe would load it.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import shutil
from collections.abc import Callable
from pathlib import Path

from layerbench.errors import PrerequisiteError, ToolError
from layerbench.proc import Runner
from layerbench.spec.engines import API_ENGINE
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.models import EngineSpec
from layerbench.spec.traits import TRAITS, traits
from layerbench.stack import image_source
from layerbench.stack.engines import HostProbe, probe_engines
from layerbench.stack.remote import probe as probe_remote
from layerbench.stack.target import DEFAULT_CACHE  # beside BuildContext; read here too
from layerbench.workloads import iozone, ycsb
from layerbench.workloads.servers import SERVERS

# The programs the engines' rows name (spec/engines/), Docker's first: doctor's order, and the notes'.
_API_TOOLS = TRAITS[API_ENGINE].tools
_OTHER_TOOLS = tuple(dict.fromkeys(t for row in TRAITS.values() for t in row.tools if t not in _API_TOOLS))
TOOLS = (
    "fio",
    *_API_TOOLS,
    "fuse-overlayfs",
    "losetup",
    "mount",
    *_OTHER_TOOLS,
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
    profiler: Callable[[Runner], str | None] | None = None,
    images: tuple[str, ...] = (),
    engines: tuple[EngineSpec, ...] = (),
    probes: frozenset[str] = frozenset(),
) -> HostCaps:
    """What this host offers, read from /proc, /sys, /dev and PATH; nothing is changed.

    With ``profiler`` (an experiment that profiles: ``profiling.perf.missing``), whether perf records the whole
    machine here; for each of ``images`` (image servers' images), whether the engines can have it (a registry
    they reach, or a file). Then each engine's own probe (stack/engines/), handed ``engines`` (the engines the
    cells name, on each of their nodes) and what they, and ``probes``, make it learn (``doctor`` asks for
    ``HOST_PROBES``: a probe boot of a guest's kernel, seconds with KVM, up to a minute without)."""
    base = _host(runner, cache_dir, profiler, images)
    learns = probes | {p for e in engines if (p := traits(e.kind).probe) is not None}
    ask = HostProbe(runner, cache_dir, base, engines, frozenset(learns))
    found = probe_engines(ask)
    return dataclasses.replace(base, engines=found, notes=base.notes + tuple(ask.notes))


def _host(
    runner: Runner, cache_dir: Path, profiler: Callable[[Runner], str | None] | None, images: tuple[str, ...]
) -> HostCaps:
    """This host but its engines."""
    kernel = platform.release()
    notes: list[str] = []
    loadable = _module_prober(runner, kernel, notes)
    listed = _proc_filesystems()
    filesystems = frozenset(listed | {fs for fs in MODULE_FILESYSTEMS if fs not in listed and loadable(fs)})
    misc = _proc_misc()
    binaries = _on_path(TOOLS, notes)
    fuse = _char_driver(Path("/dev/fuse"), "fuse", "fuse", misc, loadable, notes)
    device_mapper = _char_driver(Path("/dev/mapper/control"), "device-mapper", "dm_mod", misc, loadable, notes)
    return HostCaps(
        is_root=os.geteuid() == 0,
        kernel=kernel,
        filesystems=filesystems,
        mkfs=frozenset(fs for fs in MKFS_TYPES if _on_path((f"mkfs.{fs}",), notes)),
        loop=_char_driver(Path("/dev/loop-control"), "loop-control", "loop", misc, loadable, notes),
        zram=ZRAM_HOT_ADD.exists() or loadable("zram"),
        device_mapper=device_mapper,
        dm_thin=device_mapper and dm_target("dm_thin_pool", loadable),
        fuse=fuse,
        binaries=binaries,
        # Taken before the servers' and clients' notes below are added, as it always was (those never reached
        # `doctor`; showing them is a change of its own, not this refactoring's).
        notes=tuple(notes),
        servers=database_servers(notes, cache_dir),
        clients=clients(cache_dir, notes),
        remote=probe_remote(runner, loadable),
        images={image: image_source.missing(image) for image in images},
        **({"profiler_missing": profiler(runner)} if profiler else {}),
    )


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
