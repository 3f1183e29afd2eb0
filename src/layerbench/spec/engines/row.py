"""What a row of the engines' registry holds: an engine's traits, its feasibility rule, what its probe learns.

Pure data and the shapes of functions: it imports nothing of layerbench but the host's snapshot, so every
engine's module (and through the registry, spec/models.py) reads it without a cycle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from layerbench.spec.feasibility import HostCaps

if TYPE_CHECKING:  # a rule reads a stack; the models import the registry, so the type is the checker's alone
    from layerbench.spec.models import StackSpec

# Where a workload runs on a host of its own (the host itself, or a guest): the device, or a directory.
HOST_PLACEMENTS = frozenset({"raw", "host-dir"})
# A container's placements: its writable layer, a named volume, a bind mount, memory.
CONTAINER_PLACEMENTS = frozenset({"writable-layer", "volume", "bind", "tmpfs"})
# What a cell of an engine makes the host probe (``stack.capabilities.probe``) learn before the rules read it:
# whether a guest boots here (KVM), a Kubernetes cluster's nodes, a swarm's nodes, whether a daemon answers at
# the cell's URL.
Probe = Literal["guest-boot", "kube-nodes", "swarm-nodes", "daemon-url"]
# What this host alone answers, with no machine named: `doctor` learns it whatever a spec holds.
HOST_PROBES: frozenset[Probe] = frozenset({"guest-boot"})
GUEST_UNPROFILED = "perf on the host sees a guest only as qemu's threads, not its kernel's frames"

# Why a stack of this engine cannot run on this host (binaries, drivers, nodes, what it cannot host), or None.
Rule = Callable[["StackSpec", HostCaps], str | None]


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
    runtimes: bool = False  # layerbench starts its daemon, so registers an OCI runtime with it (engines/runtimes.py)
    seccomp: bool = False  # its daemon takes a default seccomp profile from a file (dockerd --seccomp-profile)
    clients: bool = False  # many fio clients at once: its targets are on this host, servers on Unix sockets
    # Its container may run fio's own engine for a remote export (raw, no filesystem: nothing of its storage is
    # measured), on this host's network with the files the export's URI names: layerbench starts its daemon.
    export_clients: bool = False
    rule: Rule | None = None  # its own feasibility (spec/rules.py asks it on every node of a stack)
    tools: tuple[str, ...] = ()  # the programs it needs on PATH, which the host probe looks for
    binary: str | None = None  # its command-line program, as an error names the call it stands for
    version: tuple[str, ...] = ()  # the command whose first line a run records as its version
    processes: tuple[str, ...] = ()  # its own processes on this host, as a CPU profile names them
