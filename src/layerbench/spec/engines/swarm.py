"""swarm: a one-replica service pinned to a named node of a Docker Swarm, reached through that node's daemon."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from layerbench.spec.engines.kubernetes import cluster_server_options
from layerbench.spec.engines.row import EngineTraits
from layerbench.spec.feasibility import HostCaps

if TYPE_CHECKING:
    from layerbench.spec.models import StackSpec

KIND = "swarm"


@dataclass(frozen=True)
class SwarmNode:
    """A Docker Swarm node as the rules see it."""

    ready: bool
    unreachable: str | None  # why its own daemon cannot be used from this host (swarm/swarm_api.py); None: it can


@dataclass(frozen=True)
class SwarmCaps:
    """The swarm (stack/engines/swarm/swarm_api.py), probed only for experiments with swarm cells."""

    # Its nodes by hostname, or why the manager could not be reached.
    nodes: dict[str, SwarmNode] | str = "not probed: the experiment has no swarm cells"


def of(caps: HostCaps) -> SwarmCaps:
    found = caps.engines.get(KIND)
    return found if isinstance(found, SwarmCaps) else SwarmCaps()


def ready(s: StackSpec, caps: HostCaps) -> str | None:
    """A swarm node this host reaches through its own daemon (engines/swarm/swarm_api.py), with what a service has."""
    swarm = of(caps)
    if isinstance(swarm.nodes, str):
        return f"no Docker Swarm: {swarm.nodes}"
    node = swarm.nodes.get(s.engine.node or "")
    if node is None:
        return f"node {s.engine.node!r} is not in the swarm; its nodes: {', '.join(sorted(swarm.nodes)) or 'none'}"
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
    return cluster_server_options(s, "a service")


# Every node is reached through its own daemon, on this host (stack/engines/swarm/swarm_api.py).
ENGINE = EngineTraits(
    "Docker Swarm",
    node="its hostname in the swarm",
    node_here=True,
    probe="swarm-nodes",
    clients=True,
    rule=ready,
)
