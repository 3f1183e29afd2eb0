"""Feasibility rules: why a stack cannot be built, on any host or on this one.

Pure functions of the stack and a HostCaps snapshot, so they run (and are
tested) without root and before anything is touched. Each returns a sentence
a user can act on, or None.
"""

from __future__ import annotations

from layerbench.spec.clients import clients_refused
from layerbench.spec.databases import tuned
from layerbench.spec.devices import device_traits
from layerbench.spec.engines.row import Rule
from layerbench.spec.engines.vm import emulation_refused as guest_emulation_refused
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.models import (
    LinkSpec,
    StackSpec,
    Workload,
)
from layerbench.spec.traits import CONTAINER_PLACEMENTS, TRAITS, traits
from layerbench.spec.transports import FUSE_CLIENT, device_clients

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
    if pl == "claim" or not device_traits(s.device.kind).builds or not engine.builds_storage:
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
    if fs == "none" and pl == "raw" and s.device.remote is not None and s.device.remote.reached_by_fio():
        return None  # fio's own engine in a container: host_has_remote says which engines
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
    if device_traits(s.device.kind).builds or s.filesystem.type != "none":
        return (
            "placement claim's device and filesystem are the StorageClass's: set device: {kind: none} and "
            "filesystem: none (layerbench builds neither, and records what the pod got)"
        )
    if "claim" not in traits(s.engine.kind).placements:
        return "placement claim is a Kubernetes PersistentVolumeClaim: use engine {kind: kubernetes, node: NAME}"
    return None


def _docker_host_layers(s: StackSpec) -> str | None:
    """A daemon named by URL stores on its own machine: nothing is built here, and nothing here is its."""
    if device_traits(s.device.kind).builds or s.filesystem.type != "none":
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
    """What this host lacks for the stack's kind of device (its row in spec/devices/), or None."""
    host = device_traits(s.device.kind).host
    return host(caps) if host else None


def host_has_remote(s: StackSpec, caps: HostCaps) -> str | None:
    """A remote device's storage host, transport, client and link shaping, each as this host has them."""
    remote = s.device.remote
    if remote is None:
        return None
    engine = traits(s.engine.kind)
    if engine.guest:
        return "a VM's disk on a remote device is not supported yet: use engine native, docker or podman"
    fio, client = remote.reached_by_fio(), remote.client_name()
    if fio and (s.filesystem.type != "none" or s.placement.kind != "raw"):
        return f"{client} is the client itself, with no block device here: filesystem none, placement raw only"
    if fio and engine.layer and not engine.export_clients:
        ran = " or ".join(t.label for t in TRAITS.values() if t.export_clients)
        return f"{client} runs natively or in a container of {ran}; not yet on {engine.label}"
    if fio and s.limits.model_dump(exclude_none=True):
        return f"limits act on a block device and a cgroup; {client} reaches the export with neither"
    own = remote.own_cluster()  # a fault on it: allowed or refused by `run --allow-faults-on` (run/session.py)
    if own is not None and remote.link.label():
        return f"device.remote.link shapes the links of storage hosts layerbench makes; {own.conf}'s network is yours"
    cluster = remote.cluster_built()
    if cluster is not None and cluster.state != "healthy" and (s.server is not None or s.clients is not None):
        has = "servers" if s.server is not None else "clients"
        return f"cluster.state {cluster.state}: applied around a file workload's trials; not yet to a stack with {has}"
    wanted = remote.host_needs()
    wanted += [q for q in (qdisc_of(remote.link),) if q]
    for feature in wanted:
        reason = caps.remote.get(feature, "not probed")
        if reason:
            return f"a remote device over {remote.label()}: {reason}"
    if remote.client == FUSE_CLIENT and not (caps.fuse and caps.loop):
        lacking = "FUSE" if not caps.fuse else "loop devices"
        return f"a remote device over {remote.label()}: {client} needs FUSE and loop devices; this host lacks {lacking}"
    return None


def qdisc_of(link: LinkSpec) -> str | None:
    """The qdisc a link's shaping needs: netem for a delay (it also rates), tbf for a rate alone."""
    return "netem" if link.delay else "tbf" if link.rate else None


def host_has_engine(s: StackSpec, caps: HostCaps) -> str | None:
    """Each engine's own needs (its row's rule, spec/engines/; native has none), on every node its clients are
    dealt to."""
    rule = traits(s.engine.kind).rule
    if rule is None:
        return None
    for engine in s.node_engines()[1:]:
        why = rule(s.model_copy(update={"engine": engine}), caps)
        if why:
            return f"clients.nodes: {why}"
    return rule(s, caps)


def emulation_refused(s: StackSpec, caps: HostCaps, emulation: str) -> str | None:
    """A guest's cell where only an emulated CPU can run it: refused unless the experiment allows emulation."""
    return guest_emulation_refused(s, caps, emulation) if traits(s.engine.kind).guest else None


def profile_refused(s: StackSpec, caps: HostCaps, profile: str) -> str | None:
    """A profiled cell where perf cannot see it: no perf, or a guest whose kernel the host's perf does not see."""
    if profile == "none":
        return None
    unprofiled = traits(s.engine.kind).unprofiled
    if unprofiled:
        return f"profile cpu: {unprofiled}"
    return f"profile cpu: {caps.profiler_missing}" if caps.profiler_missing else None


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
    remote = s.device.remote
    if remote is not None and remote.reached_by_fio():
        others = " or ".join(device_clients(remote.transport))
        return f"clients: {remote.client_name()} reaches one export; give the remote device a {others} client"
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
