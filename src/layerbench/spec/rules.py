"""Feasibility rules: why a stack cannot be built, on any host or on this one.

Pure functions of the stack and a HostCaps snapshot, so they run (and are
tested) without root and before anything is touched. Each returns a sentence
a user can act on, or None.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from layerbench.spec.clients import clients_refused
from layerbench.spec.databases import PROFILE_RESOURCES, tuned
from layerbench.spec.feasibility import DRIVERS_REMOVED, HostCaps
from layerbench.spec.models import LinkSpec, StackSpec, Workload
from layerbench.spec.runtimes import RUNTIMES
from layerbench.spec.traits import CONTAINER_PLACEMENTS, traits

# Database servers one guest hosts: qemu forwards one port from the host per server, set at boot.
VM_MAX_SERVERS = 8
# What each transport and client needs (keys of HostCaps.remote), beyond a storage host.
REMOTE_NEEDS: dict[tuple[str, str], tuple[str, ...]] = {
    ("nbd", "fuse"): ("nbd", "nbd-fuse"),
    ("nbd", "fio"): ("nbd", "nbd-fio"),
    ("nbd", "kernel"): ("nbd", "nbd-kernel"),
    ("nvme-tcp", "kernel"): ("nvme-tcp",),
    ("iscsi", "kernel"): ("iscsi",),
}

Rule = Callable[[StackSpec, HostCaps], str | None]

# Mount options that belong to one filesystem; mount(8) would fail on another.
FS_ONLY_OPTIONS = {
    "dioread_nolock": "ext4",
    "nodioread_nolock": "ext4",
    "nodatacow": "btrfs",
    "datacow": "btrfs",
    "nodatasum": "btrfs",
}
APT_PACKAGE = {
    "ext4": "e2fsprogs",
    "xfs": "xfsprogs",
    "btrfs": "btrfs-progs",
    "reiserfs": "reiserfsprogs",
}


def placement_matches_layers(s: StackSpec, caps: HostCaps) -> str | None:
    fs, engine, pl = s.filesystem.type, traits(s.engine.kind), s.placement.kind
    if pl == "claim" or s.device.kind == "none" or not engine.builds_storage:
        return _nothing_built_here(s)
    if fs == "none" and pl != "raw":
        return f"placement {pl!r} needs a filesystem; with filesystem 'none' only 'raw' applies"
    if pl == "raw" and fs != "none":
        return "placement 'raw' is the bare device; set filesystem: none"
    if not engine.container:  # the host itself, or a guest: the device, or a directory (on a guest's disk file)
        if pl in engine.placements:
            return None
        if engine.guest:
            return f"placement {pl!r} is a container's; a VM's disk is 'raw' (the device) or 'host-dir' (a disk file)"
        return f"placement {pl!r} is a container placement; set engine: docker:<driver> or podman:<driver>"
    if fs == "none":
        return f"{engine.label} needs a host filesystem for its data-root; set filesystem"
    if pl not in CONTAINER_PLACEMENTS:
        allowed = ", ".join(sorted(CONTAINER_PLACEMENTS))
        return f"placement {pl!r} is native; in a container use one of: {allowed}"
    return None


def _nothing_built_here(s: StackSpec) -> str | None:
    """Stacks whose storage layerbench does not build: a claim's (what the cluster's StorageClass gives) and
    a Docker host's (its daemon's own data-root, on its machine). Their device and filesystem are none."""
    if not traits(s.engine.kind).builds_storage:
        return _docker_host_layers(s)
    if s.placement.kind != "claim":
        return (
            "device 'none' builds nothing on this host: it goes with placement claim "
            "(the storage a Kubernetes StorageClass gives) or engine docker-host (a daemon's own storage)"
        )
    if s.device.kind != "none" or s.filesystem.type != "none":
        return (
            "placement claim's device and filesystem are the StorageClass's: set device: {kind: none} and "
            "filesystem: none (layerbench builds neither, and records what the pod got)"
        )
    if "claim" not in traits(s.engine.kind).placements:
        return "placement claim is a Kubernetes PersistentVolumeClaim: use engine {kind: kubernetes, node: NAME}"
    return None


def _docker_host_layers(s: StackSpec) -> str | None:
    """A daemon named by URL stores on its own machine: nothing is built here, and nothing here is its."""
    if s.device.kind != "none" or s.filesystem.type != "none":
        return (
            "engine docker-host stores on its daemon's own data-root, on that daemon's machine: layerbench builds "
            "no device nor filesystem for it; set device: {kind: none} and filesystem: none "
            "(each trial records the daemon's storage driver and backing filesystem)"
        )
    if s.placement.kind == "bind":
        return (
            "placement bind is a directory of this host, which means nothing to a daemon named by URL: "
            "use writable-layer, volume (a named volume of that daemon) or tmpfs"
        )
    if s.placement.kind not in traits(s.engine.kind).placements:
        return f"placement {s.placement.kind!r} is not a Docker host's: use writable-layer, volume or tmpfs"
    return None


def driver_fits_filesystem(s: StackSpec, caps: HostCaps) -> str | None:
    driver, fs = s.engine.driver, s.filesystem.type
    if driver == "btrfs" and fs != "btrfs":
        return f"the btrfs storage driver needs a btrfs host filesystem, not {fs}"
    ftype0 = any("ftype=0" in o for o in s.filesystem.mkfs_options)
    if driver in ("overlay2", "overlay") and fs == "xfs" and ftype0:
        return f"{driver} on xfs needs d_type: make the xfs with -n ftype=1"
    if driver in ("overlay2", "overlay") and fs == "reiserfs":
        # Measured in the test VM: dockerd refuses it ("the backing reiserfs filesystem is formatted without
        # d_type support"); reiserfs' readdir never reports a type.
        return (
            f"{driver} needs d_type, which reiserfs never reports: use the vfs driver (a volume is the same either way)"
        )
    return None


def mount_options_fit(s: StackSpec, caps: HostCaps) -> str | None:
    for opt in s.filesystem.mount_options:
        owner = FS_ONLY_OPTIONS.get(opt.split("=")[0])
        if owner and owner != s.filesystem.type:
            return f"mount option {opt!r} is {owner}'s, not {s.filesystem.type}'s"
    return None


def host_has_filesystem(s: StackSpec, caps: HostCaps) -> str | None:
    fs = s.filesystem.type
    if fs == "none":
        return None
    if fs not in caps.filesystems:
        return f"this kernel ({caps.kernel}) has no {fs}: not in /proc/filesystems and no module"
    if fs not in caps.mkfs:
        return f"mkfs.{fs} is not installed (apt-get install {APT_PACKAGE.get(fs, fs)})"
    return None


def host_has_device(s: StackSpec, caps: HostCaps) -> str | None:
    kind = s.device.kind
    if kind == "loop" and not caps.loop:
        return "no loop device support (/dev/loop-control is missing)"
    if kind == "zram" and not caps.zram:
        return "no zram support in this kernel (modprobe zram failed)"
    return None


def host_has_remote(s: StackSpec, caps: HostCaps) -> str | None:
    """A remote device's storage host, transport, client and link shaping, each as this host has them."""
    remote = s.device.remote
    if remote is None:
        return None
    engine = traits(s.engine.kind)
    if engine.guest:
        return "a VM's disk on a remote device is not supported yet: use engine native, docker or podman"
    client = remote.client
    if client == "fio" and (s.filesystem.type != "none" or engine.layer or s.placement.kind != "raw"):
        return "fio's nbd engine is the client itself, with no block device here: filesystem none, native, raw only"
    if client == "fio" and s.limits.model_dump(exclude_none=True):
        return "limits act on a block device and a cgroup; fio's nbd engine reaches the export with neither"
    needs = ["storage-host", *REMOTE_NEEDS[(remote.transport, client)]]
    needs += [q for q in (qdisc_of(remote.link),) if q]
    for feature in needs:
        reason = caps.remote.get(feature, "not probed")
        if reason:
            return f"a remote device over {remote.label()}: {reason}"
    if client == "fuse" and not (caps.fuse and caps.loop):
        lacking = "FUSE" if not caps.fuse else "loop devices"
        return f"a remote device over {remote.label()}: nbdfuse needs FUSE and loop devices; this host lacks {lacking}"
    return None


def qdisc_of(link: LinkSpec) -> str | None:
    """The qdisc a link's shaping needs: netem for a delay (it also rates), tbf for a rate alone."""
    return "netem" if link.delay else "tbf" if link.rate else None


def host_has_engine(s: StackSpec, caps: HostCaps) -> str | None:
    """Each engine's own needs (ENGINE_RULES; native has none), on every node its clients are dealt to."""
    rule = ENGINE_RULES.get(s.engine.kind)
    if rule is None:
        return None
    for engine in s.node_engines()[1:]:
        why = rule(s.model_copy(update={"engine": engine}), caps)
        if why:
            return f"clients.nodes: {why}"
    return rule(s, caps)


def _docker_ready(s: StackSpec, caps: HostCaps) -> str | None:
    missing = [b for b in ("dockerd", "containerd", "runc") if b not in caps.binaries]
    if missing:
        return f"Docker engine binaries missing: {', '.join(missing)} (apt-get install docker.io)"
    driver = s.engine.driver or "overlay2"
    if driver not in caps.docker_drivers:
        return _why_no_driver(driver, caps)
    dm = _devicemapper_ready(s, caps) if driver == "devicemapper" else None
    return dm or runtime_ready(s, caps) or seccomp_ready(s)


def seccomp_ready(s: StackSpec) -> str | None:
    """The daemon's seccomp profile is a JSON file that dockerd can read (it refuses to start otherwise)."""
    if s.engine.seccomp is None:
        return None
    try:
        json.loads(Path(s.engine.seccomp).read_text())
    except (OSError, ValueError) as exc:
        return f"seccomp profile {s.engine.seccomp}: not a readable JSON file ({exc})"
    return None


def runtime_ready(s: StackSpec, caps: HostCaps) -> str | None:
    """The cell's OCI runtime ran a probe container here (stack/runtimes.py), or why not."""
    name = s.engine.runtime
    if name is None:
        return None
    if s.server is not None and RUNTIMES[name].servers:
        return f"runtime {name}: {RUNTIMES[name].servers}"
    why = caps.runtimes.get(name, "not probed")
    return f"runtime {name}: {why}" if why else None


def _devicemapper_ready(s: StackSpec, caps: HostCaps) -> str | None:
    """What the devicemapper driver needs beyond the kernel's device-mapper (in docker_drivers)."""
    if "dmsetup" not in caps.binaries:
        return "the devicemapper driver's devices are removed with dmsetup, which is missing (apt-get install dmsetup)"
    if s.engine.mode != "direct-lvm":
        return None
    if not caps.loop:
        return "direct-lvm's thin pool sits on a loop device, and this host has no loop devices"
    missing = [b for b in ("lvcreate", "thin_check") if b not in caps.binaries]
    if missing:
        return (
            f"direct-lvm builds an LVM thin pool; {', '.join(missing)} missing "
            "(apt-get install lvm2 thin-provisioning-tools)"
        )
    return None


def _podman_ready(s: StackSpec, caps: HostCaps) -> str | None:
    missing = [b for b in ("podman", "conmon", "runc") if b not in caps.binaries]
    if missing:
        return f"Podman binaries missing: {', '.join(missing)} (apt-get install podman)"
    driver = s.engine.driver or "overlay"
    if driver not in caps.podman_drivers:
        return _why_no_driver(driver, caps)
    if s.server is not None:
        # Servers are reached on a private bridge network: Podman's would need CNI bridge, IPAM and
        # firewall state of its own, which layerbench does not build (yet).
        return "database servers under Podman are not supported yet (no private network for them): use docker or native"
    return runtime_ready(s, caps)


def _vm_ready(s: StackSpec, caps: HostCaps) -> str | None:
    if caps.vm_missing:
        return f"no guest can boot here: {caps.vm_missing}"
    if s.limits.model_dump(exclude_none=True):
        return "limits on a VM cell are not supported yet (a guest's size is not a cgroup limit): drop them"
    if s.server is not None and s.instances > VM_MAX_SERVERS:
        return f"a VM hosts at most {VM_MAX_SERVERS} database servers (one forwarded port each)"
    return None


def emulation_refused(s: StackSpec, caps: HostCaps, emulation: str) -> str | None:
    """A VM cell where only an emulated CPU can run it: refused unless the experiment allows emulation."""
    if not traits(s.engine.kind).guest or caps.vm_accel != "tcg" or emulation == "allow":
        return None
    return (
        "KVM cannot run a guest on this host, and an emulated CPU is 10-50x slower: VM cells are refused "
        "(set 'emulation: allow' in the spec for a functional test; its cells are flagged not comparable)"
    )


# Each engine's own feasibility: binaries, storage drivers, what it cannot host.
def profile_refused(s: StackSpec, caps: HostCaps, profile: str) -> str | None:
    """A profiled cell where perf cannot see it: no perf, or a guest whose kernel the host's perf does not see."""
    if profile == "none":
        return None
    unprofiled = traits(s.engine.kind).unprofiled
    if unprofiled:
        return f"profile cpu: {unprofiled}"
    return f"profile cpu: {caps.profiler_missing}" if caps.profiler_missing else None


def _kubernetes_ready(s: StackSpec, caps: HostCaps) -> str | None:
    if isinstance(caps.kube, str):
        return f"no Kubernetes cluster: {caps.kube}"
    node = caps.kube.get(s.engine.node or "")
    if node is None:
        return f"node {s.engine.node!r} is not in the cluster; its nodes: {', '.join(sorted(caps.kube)) or 'none'}"
    if not node.ready:
        return f"node {s.engine.node!r} is not Ready"
    if s.placement.kind == "claim" and s.placement.storage_class not in caps.kube_classes:
        known = ", ".join(sorted(caps.kube_classes)) or "none"
        return f"the cluster has no StorageClass {s.placement.storage_class!r}; its StorageClasses: {known}"
    if s.placement.kind in KUBE_LOCAL_PLACEMENTS and not node.local:
        return (
            f"placement {s.placement.kind!r} keeps the pod's data on the filesystem layerbench builds on this host, "
            f"and node {s.engine.node!r} is another machine (its boot id is not this host's): "
            "use tmpfs there"
        )
    if s.placement.kind == "writable-layer":
        return (
            "a pod's writable layer is wherever the node's container runtime keeps its root, not on the "
            "filesystem layerbench builds: use bind (a hostPath), volume (a claim on a local volume) or tmpfs"
        )
    if s.limits.cpuset or s.limits.read_bps or s.limits.write_bps:
        return (
            "a pod's limits are cpus and memory: drop cpuset (the kubelet's static CPU manager pins, not a pod) "
            "and read_bps/write_bps (Kubernetes has no block-I/O limit)"
        )
    if s.clients is not None and s.server is None and not node.local:  # a database's clients run here anyway
        return (
            f"clients: the fio client on this host reaches each pod's fio server through the pod's root "
            f"(/proc), and node {s.engine.node!r} is another machine"
        )
    if s.server is not None and not node.local:
        return (
            f"the database client runs on this host and reaches its server at the pod's IP: node {s.engine.node!r} "
            "is another machine, whose pods this host may not route to"
        )
    return _cluster_server_options(s, "a pod")


def _cluster_server_options(s: StackSpec, unit: str) -> str | None:
    """Seed 000's profiles share cpus and memory, which a pod or a service has; not block I/O, nor seed
    001's tunings (container options of Docker's that these engines do not pass)."""
    if s.server is None:
        return None
    if "bandwidth" in PROFILE_RESOURCES[s.profile]:
        return (
            f"profile {s.profile!r} shares the device's bandwidth: {unit} has no block-I/O limit "
            "(use CPU, MEM or CPU+MEM)"
        )
    if s.tuning != "default":
        return f"tuning {s.tuning!r} is a Docker container option, not {unit}'s: drop it (or use engine docker)"
    if s.server.kind == "ferretdb":
        # Reachable beyond this host (a node's published port, the pod network), a server must ask for the
        # run's password; FerretDB's embeddable SQLite backend cannot.
        return (
            f"ferretdb has no authentication (FerretDB 1.24 on SQLite): in {unit} anyone who reaches the node "
            "could use it; run it with engine native, docker or podman"
        )
    return None


def _swarm_ready(s: StackSpec, caps: HostCaps) -> str | None:
    """A swarm node this host reaches through its own daemon (engines/swarm/swarm_api.py), with what a service has."""
    if isinstance(caps.swarm, str):
        return f"no Docker Swarm: {caps.swarm}"
    node = caps.swarm.get(s.engine.node or "")
    if node is None:
        return f"node {s.engine.node!r} is not in the swarm; its nodes: {', '.join(sorted(caps.swarm)) or 'none'}"
    if not node.ready:
        return f"swarm node {s.engine.node!r} is not ready (or not active)"
    if node.unreachable:
        return (
            f"swarm node {s.engine.node!r}: {node.unreachable}; layerbench loads its image and runs every command "
            "through the node's own daemon, on this host (docker node update --label-add "
            f"layerbench.socket=unix:///PATH/docker.sock {s.engine.node})"
        )
    if s.placement.kind == "writable-layer":
        return (
            "a task's writable layer is under the node daemon's data-root, not on the filesystem layerbench "
            "builds: use bind, volume (a local volume bound to that filesystem) or tmpfs"
        )
    if s.limits.cpuset or s.limits.read_bps or s.limits.write_bps:
        return (
            "a swarm service's limits are cpus and memory: drop cpuset and read_bps/write_bps "
            "(a service has no cpuset and no block-I/O limit)"
        )
    return _cluster_server_options(s, "a service")


def _docker_host_ready(s: StackSpec, caps: HostCaps) -> str | None:
    """A daemon that answers at its URL (docker_host/host_api.py), with what layerbench can ask of it from here."""
    url = s.engine.node or ""
    why = caps.docker_hosts.get(s.engine.daemon or "", "not probed")
    if why is not None:
        return f"no Docker daemon answers at {url}: {why}"
    if s.limits.read_bps or s.limits.write_bps:
        return (
            "block-I/O limits name a device of the daemon's machine, which layerbench cannot see from here: "
            "drop read_bps/write_bps (cpus, memory and cpuset go to the daemon as they are)"
        )
    if s.server is not None:
        return (
            "database servers on a Docker host are not supported yet: use engine docker, swarm or kubernetes for them"
        )
    return None


def _daemon_clients(s: StackSpec) -> str | None:
    """Many clients reach their fio servers through each container's root (/proc) here: only a daemon whose
    socket is on this machine can have its containers there (stack/engines/docker_host verifies each one)."""
    assert s.clients is not None
    for url in [e.node or "" for e in s.node_engines() if traits(e.kind).daemon_url]:
        if not url.startswith("unix://"):
            return (
                "clients: the fio client on this host reaches each container's fio server through its root "
                f"(/proc), and the daemon at {url} is reached over the network, perhaps on another machine: "
                "name it by its unix:// socket"
            )
        if s.clients.shared:
            return "clients.shared: not yet on docker-host (each client gets a volume of its own)"
    return None


ENGINE_RULES: dict[str, Rule] = {
    "docker": _docker_ready,
    "podman": _podman_ready,
    "vm": _vm_ready,
    "vm+docker": _vm_ready,
    "kubernetes": _kubernetes_ready,
    "swarm": _swarm_ready,
    "docker-host": _docker_host_ready,
}
# A pod's placements on the filesystem layerbench builds here: a hostPath (bind) and a local volume's claim.
KUBE_LOCAL_PLACEMENTS = frozenset({"bind", "volume"})


def _why_no_driver(driver: str, caps: HostCaps) -> str:
    major = caps.dockerd_major
    for gone, since in DRIVERS_REMOVED:
        if driver == gone and major is not None and major >= since:
            return f"dockerd {major}.x no longer has the {driver} storage driver (Docker {since} removed it)"
    if driver == "devicemapper" and caps.device_mapper and not caps.dm_thin:
        return "the devicemapper driver needs device-mapper's thin pool (dm-thin-pool), which this kernel lacks"
    reasons = {
        "devicemapper": "the devicemapper driver needs device-mapper, which this kernel lacks",
        "aufs": "the aufs driver needs aufs, which this kernel lacks (it was never in mainline)",
        "fuse-overlayfs": "fuse-overlayfs needs /dev/fuse and the fuse-overlayfs binary",
        "overlay2": "overlay2 needs overlayfs in the kernel",
        "overlay": "Podman's overlay driver needs overlayfs in the kernel",
        "btrfs": "the btrfs driver needs btrfs in the kernel",
    }
    return reasons.get(driver, f"storage driver {driver} is not available on this host")


def server_fits_stack(s: StackSpec, caps: HostCaps) -> str | None:
    if s.server is None:
        return None
    if (s.filesystem.type == "none" and s.placement.kind != "claim") or s.placement.kind == "raw":
        return "a database server keeps its data in files: give the stack a filesystem and a directory placement"
    engine = traits(s.engine.kind)
    # Natively and in a VM a server has no container of its own: no cgroup limits, nothing to tune.
    where = None if engine.server_limits else "in a VM" if engine.guest else "natively"
    if where and s.profile != "none":
        return f"profile {s.profile!r} is a container's cgroup limits: {where} there is none (use engine docker)"
    if where and s.tuning != "default":
        return f"tuning {s.tuning!r} is a container option: {where} there is nothing to tune (use engine docker)"
    if s.server.kind == "cassandra" and engine.guest:
        return "cassandra in a VM is not supported yet (its JVM and jars have not been run in the test guest)"
    return image_fits_stack(s) if s.server.kind == "image" else None


def image_fits_stack(s: StackSpec) -> str | None:
    """An image server is its container's own process: a container engine on this host runs it."""
    assert s.server is not None
    if not traits(s.engine.kind).images:
        return f"an image server ({s.server.name}) runs in a container: use engine docker or podman"
    if tuned(s.tuning, "host-network") and s.instances > 1:
        return (
            f"{s.instances} instances of {s.server.name} on the host's network would all listen on "
            f"port {s.server.port}: one instance, or the default (bridge) network"
        )
    if tuned(s.tuning, "host-network"):
        # The image decides where it listens (every interface, for the official ones) and whether it asks
        # for a password; layerbench can make neither private on the host's network.
        return (
            f"{s.server.name} on the host's network would listen on every interface of this host, with only "
            "the image's own authentication: use the default (bridge) network, or a server layerbench "
            "configures (kind postgres, redis, cassandra: each requires the run's password)"
        )
    return None


def tuning_fits_stack(s: StackSpec, caps: HostCaps) -> str | None:
    """A file workload's container takes seccomp's tuning; pinning and the host network are a server's."""
    if s.server is not None or s.tuning == "default":
        return None
    if not traits(s.engine.kind).tunings:
        return f"tuning {s.tuning!r} is a container option: use engine docker"
    if s.tuning == "seccomp-unconfined":
        return None
    if s.tuning == "all":
        return (
            "tuning 'all' pins database servers and gives them the host's network: "
            "a file workload's container takes seccomp-unconfined alone"
        )
    if s.tuning == "cpuset":
        return "tuning 'cpuset' pins database servers' containers: for a file workload set limits.cpuset"
    return f"tuning {s.tuning!r} is a database server's network: a file workload's container has none"


def host_has_server(s: StackSpec, caps: HostCaps) -> str | None:
    if s.server is None or s.server.kind in caps.servers:
        return None
    if s.server.kind == "image":
        assert s.server.image is not None
        return caps.images.get(s.server.image, f"image {s.server.image} was not probed")
    if s.server.kind == "cassandra":
        return "cassandra is not set up (java, and its jars in the cache: make setup fetches them)"
    if s.server.kind == "ferretdb":
        return "ferretdb is not built (its binary in the cache: make ferretdb builds it, with Go 1.24 or later)"
    package = {"postgres": "postgresql", "redis": "redis-server"}.get(s.server.kind, s.server.kind)
    return f"{s.server.kind} is not installed on this host (apt-get install {package}; make setup does)"


def needs_root(s: StackSpec, caps: HostCaps) -> str | None:
    return None if caps.is_root else "building stacks needs root (losetup, mkfs, mount, dockerd, podman)"


def clients_fit_stack(s: StackSpec, caps: HostCaps) -> str | None:
    """Many clients (spec/clients.py): engines whose targets are this host's, a placement with room for each.
    A database's clients run on this host against each instance, whatever holds the server (``client_fits``)."""
    if s.clients is None or s.server is not None:
        return None
    has_limits = bool(s.limits.model_dump(exclude_none=True))
    if s.device.remote is not None and s.device.remote.client == "fio":
        return "clients: fio's nbd engine reaches one export; give the remote device a kernel or fuse client"
    return clients_refused(s.engine.kind, s.placement.kind, s.clients.shared, has_limits) or _daemon_clients(s)


RULES: tuple[Rule, ...] = (
    clients_fit_stack,  # first: "not yet on ENGINE" says more than what this host lacks for that engine
    placement_matches_layers,
    driver_fits_filesystem,
    mount_options_fit,
    needs_root,
    host_has_device,
    host_has_remote,
    host_has_filesystem,
    host_has_engine,
    server_fits_stack,
    tuning_fits_stack,
    host_has_server,
)


def pairs(stack: StackSpec, w: Workload) -> bool:
    """Does this workload belong on this stack at all? fio runs on stacks without a server, clients on servers.

    Not a refusal: a spec with both kinds of stacks and workloads pairs each with its own.
    """
    return (stack.server is None) != w.needs_server


def workload_fits(stack: StackSpec, w: Workload) -> str | None:
    """Rules about a workload on a stack (the rest are the stack's alone): each workload type's own
    (``WorkloadSpec.refused_on``, on its model)."""
    return w.refused_on(stack)


def client_ready(w: Workload, caps: HostCaps) -> str | None:
    return w.client_missing(caps)


def why_not(stack: StackSpec, caps: HostCaps) -> str | None:
    """The first reason this stack cannot be built here, or None."""
    for rule in RULES:
        reason = rule(stack, caps)
        if reason:
            return reason
    return None
