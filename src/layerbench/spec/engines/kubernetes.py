"""kubernetes: a pod pinned to a named node of a cluster; what its cells need of the cluster, as probed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from layerbench.spec.databases import PROFILE_RESOURCES
from layerbench.spec.engines.row import CONTAINER_PLACEMENTS, EngineTraits
from layerbench.spec.feasibility import HostCaps

if TYPE_CHECKING:
    from layerbench.spec.models import StackSpec

KIND = "kubernetes"
# A pod's placements on the filesystem layerbench builds here: a hostPath (bind) and a local volume's claim.
KUBE_LOCAL_PLACEMENTS = frozenset({"bind", "volume"})


@dataclass(frozen=True)
class ClusterNode:
    """A Kubernetes node as the rules see it."""

    ready: bool
    local: bool  # its boot id is this host's: it shares this host's filesystems and cgroups
    # The CSI drivers running on it (its CSINode's); None where the cluster would not say (RBAC): not judged.
    csi_drivers: frozenset[str] | None = None


@dataclass(frozen=True)
class KubeCaps:
    """The cluster (stack/engines/kubernetes/kube_api.py), probed only for experiments with kubernetes cells."""

    # Its nodes by name, or why it could not be reached.
    nodes: dict[str, ClusterNode] | str = "not probed: the experiment has no kubernetes cells"
    classes: Mapping[str, str] = field(default_factory=dict)  # the cluster's StorageClasses: name → provisioner


def of(caps: HostCaps) -> KubeCaps:
    found = caps.engines.get(KIND)
    return found if isinstance(found, KubeCaps) else KubeCaps()


def claim_refused(name: str, node_name: str, node: ClusterNode, cluster: KubeCaps) -> str | None:
    """A claim of a StorageClass the cluster does not have, or whose CSI driver does not run on the node (a
    Ceph class without Rook or ceph-csi running, say: their pods' images could not be had): it would stay
    Pending."""
    if name not in cluster.classes:
        known = ", ".join(sorted(cluster.classes)) or "none"
        return f"the cluster has no StorageClass {name!r}; its StorageClasses: {known}"
    provisioner = cluster.classes[name]
    if node.csi_drivers is not None and is_csi(provisioner) and provisioner not in node.csi_drivers:
        running = ", ".join(sorted(node.csi_drivers)) or "none"
        return (
            f"StorageClass {name!r} is provisioned by the CSI driver {provisioner}, which does not run on node "
            f"{node_name!r} (its CSI drivers: {running}): a claim of it would stay Pending. Deploy the driver "
            "(for Ceph RBD: Rook or ceph-csi; a cluster that cannot pull their images cannot run them)"
        )
    return None


def is_csi(provisioner: str) -> bool:
    """A provisioner named as CSI drivers are (rbd.csi.ceph.com, ebs.csi.aws.com), not an in-tree or other
    external one (kubernetes.io/no-provisioner, rancher.io/local-path), which no CSINode lists."""
    return "csi" in provisioner.lower().split(".")


def ready(s: StackSpec, caps: HostCaps) -> str | None:
    cluster = of(caps)
    if isinstance(cluster.nodes, str):
        return f"no Kubernetes cluster: {cluster.nodes}"
    node = cluster.nodes.get(s.engine.node or "")
    if node is None:
        return f"node {s.engine.node!r} is not in the cluster; its nodes: {', '.join(sorted(cluster.nodes)) or 'none'}"
    if not node.ready:
        return f"node {s.engine.node!r} is not Ready"
    if s.placement.kind == "claim":
        why = claim_refused(s.placement.storage_class or "", s.engine.node or "", node, cluster)
        if why:
            return why
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
    return cluster_server_options(s, "a pod")


def cluster_server_options(s: StackSpec, unit: str) -> str | None:
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


ENGINE = EngineTraits(
    "Kubernetes",
    placements=CONTAINER_PLACEMENTS | {"claim"},
    node="its name in the cluster",
    probe="kube-nodes",
    clients=True,  # on a node that is this host (its rule, above): a pod each
    rule=ready,
)
