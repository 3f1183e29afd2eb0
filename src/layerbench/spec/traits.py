"""What each engine is, as the code outside stack/engines/ asks it: one row per engine kind.

fio's generic code reads its I/O engines' flags (``FIO_DISKLESSIO``, ``FIO_SYNCIO``, ...) instead of their
names; here the rules, the matrix, the space check, the session, advice, findings and checks read a trait of
``TRAITS`` instead of comparing ``engine.kind`` with a name (``tests/unit/test_seam.py`` fails on such a
comparison outside stack/engines/ and this module). Pure data: it imports nothing of layerbench, so the spec
layer reads it as freely as the stack does. A new engine is one row here (and its name in
``spec.models.EngineKind``, which a test keeps equal to the keys).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# Where a workload runs on a host of its own (the host itself, or a guest): the device, or a directory.
HOST_PLACEMENTS = frozenset({"raw", "host-dir"})
# A container's placements: its writable layer, a named volume, a bind mount, memory.
CONTAINER_PLACEMENTS = frozenset({"writable-layer", "volume", "bind", "tmpfs"})
# What a cell of an engine makes the host probe (``stack.capabilities.probe``) learn before the rules read it:
# whether a guest boots here (KVM), a Kubernetes cluster's nodes, a swarm's nodes, whether a daemon answers at
# the cell's URL.
Probe = Literal["guest-boot", "kube-nodes", "swarm-nodes", "daemon-url"]


@dataclass(frozen=True)
class EngineTraits:
    label: str  # how a sentence names it ("Docker", "a VM")
    # An engine between the workload and this host. False: native, the host's own process (no storage driver,
    # the baseline a container or a VM is compared with, a layer fewer in `checks.layers`).
    layer: bool = True
    # The workload runs in a container (its placements are a container's); False: on a host of its own.
    container: bool = True
    # It runs in a guest with a kernel of its own (a VM): no remote device yet, emulation refused unless allowed.
    guest: bool = False
    placements: frozenset[str] = CONTAINER_PLACEMENTS  # the placements it offers
    default_placement: str = "writable-layer"  # on a filesystem, when a stack names none
    drivers: tuple[str, ...] = ()  # its storage drivers, the first its default; () takes none of them
    node: str | None = None  # what names the node a cell runs on (engine.node, required); None: it has none
    daemon_url: bool = False  # its node is a Docker daemon's URL (with tls over tcp://), probed per URL
    node_here: bool = False  # every node's daemon answers on this machine: parallel parts share its CPUs
    builds_storage: bool = True  # layerbench builds its device and filesystem on this host
    images: bool = False  # it runs an image server's own image
    tunings: bool = False  # a file workload's container takes seccomp's tuning (a Docker container option)
    server_limits: bool = True  # database servers take a profile's cgroup limits and a tuning
    unprofiled: str | None = None  # why perf on this host cannot profile its cells (profile: cpu refused)
    probe: Probe | None = None  # what the host probe must learn for its cells
    runtimes: bool = False  # layerbench starts its daemon, so registers an OCI runtime with it (spec/runtimes.py)
    seccomp: bool = False  # its daemon takes a default seccomp profile from a file (dockerd --seccomp-profile)
    clients: bool = False  # many fio clients at once: its targets are on this host, servers on Unix sockets


GUEST_UNPROFILED = "perf on the host sees a guest only as qemu's threads, not its kernel's frames"

TRAITS: dict[str, EngineTraits] = {
    "native": EngineTraits(
        "native",
        layer=False,
        container=False,
        placements=HOST_PLACEMENTS,
        default_placement="host-dir",
        server_limits=False,
        clients=True,
    ),
    "docker": EngineTraits(
        "Docker",
        drivers=("overlay2", "btrfs", "vfs", "fuse-overlayfs", "devicemapper", "aufs"),
        images=True,
        tunings=True,
        runtimes=True,
        seccomp=True,
        clients=True,
    ),
    # Podman calls overlay "overlay".
    "podman": EngineTraits(
        "Podman",
        drivers=("overlay", "vfs", "btrfs"),
        images=True,
        tunings=True,
        runtimes=True,
        clients=True,
    ),
    # The guest is the host: the device, or a directory on the disk file's filesystem.
    "vm": EngineTraits(
        "a VM",
        container=False,
        guest=True,
        placements=HOST_PLACEMENTS,
        server_limits=False,
        unprofiled=GUEST_UNPROFILED,
        probe="guest-boot",
    ),
    # The guest's Docker, on the filesystem the guest makes on its disk.
    "vm+docker": EngineTraits(
        "Docker in a VM",
        guest=True,
        drivers=("overlay2", "vfs"),
        server_limits=False,
        unprofiled=GUEST_UNPROFILED,
        probe="guest-boot",
    ),
    "kubernetes": EngineTraits(
        "Kubernetes",
        placements=CONTAINER_PLACEMENTS | {"claim"},
        node="its name in the cluster",
        probe="kube-nodes",
        clients=True,  # on a node that is this host (spec/rules.py): a pod each
    ),
    # Every node is reached through its own daemon, on this host (stack/engines/swarm/swarm_api.py).
    "swarm": EngineTraits(
        "Docker Swarm",
        node="its hostname in the swarm",
        node_here=True,
        probe="swarm-nodes",
        clients=True,
    ),
    # A daemon layerbench did not start, named by URL: its storage is its own, on its machine.
    "docker-host": EngineTraits(
        "a Docker host",
        placements=frozenset({"writable-layer", "volume", "tmpfs"}),
        node="the daemon's URL, as DOCKER_HOST takes it",
        daemon_url=True,
        builds_storage=False,
        clients=True,  # by a unix:// socket, each container's process found here (spec/rules.py)
        tunings=True,
        unprofiled="perf records this host, and a Docker host's containers run where its daemon is",
        probe="daemon-url",
    ),
}


def traits(kind: str) -> EngineTraits:
    """The traits of an engine kind (``EngineSpec.kind``)."""
    return TRAITS[kind]
