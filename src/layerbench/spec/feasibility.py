"""What this host can build: a snapshot the feasibility rules (spec/rules.py) read.

Probed by ``layerbench.stack.capabilities.probe``; kept as plain data here so
the rules stay pure and testable without root.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Docker releases that dropped a storage driver: (driver, first major without it).
DRIVERS_REMOVED = (("aufs", 24), ("devicemapper", 25))


@dataclass(frozen=True)
class ClusterNode:
    """A Kubernetes node as the rules see it."""

    ready: bool
    local: bool  # its boot id is this host's: it shares this host's filesystems and cgroups


@dataclass(frozen=True)
class SwarmNode:
    """A Docker Swarm node as the rules see it."""

    ready: bool
    unreachable: str | None  # why its own daemon cannot be used from this host (swarm/swarm_api.py); None: it can


@dataclass(frozen=True)
class HostCaps:
    """What this host has, as probed once per run: root, kernel, filesystems, devices, tools.

    ``notes`` holds what the probe noticed and a person should know (a device
    node without its driver, a tool in /usr/sbin but not on PATH, ...).
    """

    is_root: bool
    kernel: str
    filesystems: frozenset[str]  # usable: in /proc/filesystems, or a loadable module in /lib/modules/$(uname -r)
    mkfs: frozenset[str]  # fs types whose mkfs.<type> binary exists
    loop: bool  # /dev/loop-control exists and its driver is there (/proc/misc) or loadable
    zram: bool  # /sys/class/zram-control/hot_add exists (or modprobe zram works)
    device_mapper: bool  # device-mapper in /proc/misc or dm_mod loadable (a bare /dev/mapper/control is not enough)
    fuse: bool  # /dev/fuse exists and its driver is there or loadable
    binaries: frozenset[str]  # which of capabilities.TOOLS are on PATH
    docker_drivers: frozenset[str]  # storage drivers this host could run (see capabilities.docker_drivers)
    dm_thin: bool = False  # device-mapper's thin-pool target (dm-thin-pool) is built in, loaded or loadable
    dockerd_major: int | None = None  # dockerd's major version (Docker 24 dropped aufs, 25 devicemapper)
    podman_drivers: frozenset[str] = frozenset()  # Podman's storage drivers this host could run (overlay, vfs, btrfs)
    notes: tuple[str, ...] = ()  # human-readable remarks from probing
    servers: frozenset[str] = frozenset()  # database servers installed (postgres, redis)
    clients: frozenset[str] = frozenset()  # tools beyond fio that are ready: ycsb (java, jars), pgbench, iozone
    # Guests (the vm engine), probed only for experiments that have VM cells: a probe boots a kernel.
    vm_accel: str | None = None  # "kvm" where a probe guest ran under KVM, "tcg" where only emulation can
    vm_missing: str | None = "not probed: the experiment has no VM cells"  # why no guest can boot here
    # perf (`profile: cpu`), probed only for experiments that profile: None where it records system-wide.
    profiler_missing: str | None = "not probed: the experiment profiles nothing"
    # Remote devices (stack/remote/needs.py): feature -> None where this host has it, else why not.
    # Features: storage-host, nbd, nbd-fuse, nbd-kernel, nvme-tcp, iscsi, netem, tbf; an absent one was not probed.
    remote: dict[str, str | None] = field(default_factory=dict)
    # Images of image servers (spec/databases.py), probed only for experiments that name them:
    # reference or archive path -> None where the engine can have it, else why not.
    images: dict[str, str | None] = field(default_factory=dict)
    # The Kubernetes cluster (kubernetes/kube_api.py), probed only for experiments with kubernetes cells: its nodes
    # by name, or why it could not be reached.
    kube: dict[str, ClusterNode] | str = "not probed: the experiment has no kubernetes cells"
    kube_classes: frozenset[str] = frozenset()  # the cluster's StorageClasses, by name (probed with kube)
    # The Docker Swarm (stack/engines/swarm/swarm_api.py), probed only for experiments with swarm cells: its nodes by
    # hostname, or why the manager could not be reached.
    swarm: dict[str, SwarmNode] | str = "not probed: the experiment has no swarm cells"
    # Docker daemons named by URL (engines/docker_host/host_api.py), probed only for the experiment's docker-host cells:
    # URL -> None where a daemon answers there, else why not (an absent URL was not probed).
    docker_hosts: dict[str, str | None] = field(default_factory=dict)
    # OCI runtimes (spec/runtimes.py), probed only for the experiment's cells that name one (stack/runtimes.py):
    # name -> None where it ran a container here, else why not, in its own words.
    runtimes: dict[str, str | None] = field(default_factory=dict)
