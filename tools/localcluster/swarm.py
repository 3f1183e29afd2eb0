"""A real Docker Swarm on this host: three dockerd, each in a network namespace of its own, one swarm.

Every node is a network namespace (netns.py, subnet 88: the Kubernetes cluster's is 77) and a UTS
namespace with the node's own hostname (Swarm names a node by its daemon's hostname), with Debian's
dockerd and the containerd it starts and manages for itself: its own --data-root, --exec-root (where
that containerd keeps its state and socket), --pidfile, socket and cgroup parent, all under one
directory. node1 initialises the swarm and advertises its namespace's address; node2 and node3 join
as workers (one manager is all a test needs: three would replicate the raft log between daemons on a
2-core host for nothing, and a worker is what a benchmark node usually is; it also makes the tests
prove that layerbench reaches a node that is not the manager through that node's own daemon).

Each node is labelled `layerbench.socket=unix://<its daemon's socket>`: the swarm engine loads its
image on the node and runs commands there through that daemon. State lives in state.json, so `down`
takes the swarm apart from another process, after a crash too.

Measured in issue 14 (Docker 20.10, a kernel without IPVS, cgroup v1, no systemd):
DOCKER_SERVICE_PREFER_OFFLINE_IMAGE=1 (else every task asks a registry, and none answers here);
services take --endpoint-mode dnsrr and publish no ingress ports (no IPVS: the ingress network is
removed after `init`, else every daemon waits 5 s at shutdown for its sandbox to go); the daemons run with
--iptables=false (no NAT needed) and Docker's userland proxy, which forwards a database server's port
the node publishes in host mode to its task (the client on this host connects to node address:port).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import secrets
import shutil
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import docker

from localcluster import dockerds, netns, procs
from localcluster.netns import Node

SOCKET_LABEL = "layerbench.socket"  # where the node's own daemon listens; the swarm engine reads it
START_LIMIT_S = 300.0
CLONE_NEWUTS = 0x04000000


@dataclass
class State(dockerds.Daemons):
    def socket(self, name: str) -> Path:
        return self.node_dir(name) / "docker.sock"

    def url(self, name: str) -> str:
        return f"unix://{self.socket(name)}"

    @property
    def manager(self) -> str:
        """The manager's Docker socket: what `layerbench --swarm-manager` takes."""
        return self.url(self.names[0])


def load(root: Path) -> State:
    return State(**json.loads((root / "state.json").read_text()))


def up(root: Path, nodes: int = 3, subnet: int = 88) -> State:
    """A swarm of ``nodes`` Ready nodes under ``root`` (which must not exist); on failure, nothing left."""
    root.mkdir(parents=True)
    names = [f"node{i + 1}" for i in range(nodes)]
    state = State(str(root), secrets.token_hex(2), subnet, names)
    state.save()
    try:
        netns.create(state.network)
        for node in state.network.nodes:
            _daemon(state, node)
        for node in state.network.nodes:
            procs.wait_for(lambda n=node: _answers(state, n.name), START_LIMIT_S, f"{node.name}'s dockerd")
        _form(state)
    except BaseException:
        down(root)
        raise
    return state


def _daemon(state: State, node: Node) -> None:
    namespace = f"lbswarm-{state.tag}-{node.name}"
    d, hosts = state.node_dir(node.name), [state.url(node.name)]
    state.pids[node.name] = dockerds.start(d, node, hosts, namespace, _cgroup_root(state, node), _named(node.name))
    state.save()


def _named(hostname: str) -> Callable[[], None]:
    """Run in the child before exec: a UTS namespace of its own, with the node's hostname (what Swarm
    names the node by). No shell: nsenter then execs dockerd in the node's network namespace."""

    def before() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(CLONE_NEWUTS) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWUTS)")
        socket.sethostname(hostname)

    return before


def _cgroup_root(state: State, node: Node) -> str:
    return f"lbswarm{state.tag}-{node.name}"


def _client(state: State, name: str) -> docker.DockerClient:
    return dockerds.client(state.url(name))


def _answers(state: State, name: str) -> bool:
    return dockerds.answers(state.pids[name], state.node_dir(name), state.url(name))


def _form(state: State) -> None:
    """node1 initialises the swarm; the others join as workers; each node is labelled with its socket."""
    nodes = state.network.nodes
    with contextlib.closing(_client(state, nodes[0].name)) as manager:
        first = nodes[0]
        manager.swarm.init(advertise_addr=first.ip, listen_addr=f"{first.ip}:2377")
        # The routing mesh needs IPVS, which this kernel lacks, and its sandbox on every node made each
        # daemon's shutdown wait 5 s for its removal ("timeout while waiting for ingress network removal").
        # layerbench publishes no port: the swarm goes without it.
        manager.networks.get("ingress").remove()
        token = manager.swarm.attrs["JoinTokens"]["Worker"]
        for node in nodes[1:]:
            with contextlib.closing(_client(state, node.name)) as c:
                c.swarm.join(
                    remote_addrs=[f"{first.ip}:2377"], join_token=token,
                    advertise_addr=node.ip, listen_addr=f"{node.ip}:2377",
                )  # fmt: skip
        procs.wait_for(lambda: _ready(manager, state.names), START_LIMIT_S, f"{len(nodes)} swarm nodes ready")
        for n in manager.nodes.list():
            spec = n.attrs["Spec"]
            name = n.attrs["Description"]["Hostname"]
            spec["Labels"] = {**spec.get("Labels", {}), SOCKET_LABEL: state.url(name)}
            n.update(spec)


def _ready(manager: docker.DockerClient, names: list[str]) -> bool:
    ready = [n.attrs["Description"]["Hostname"] for n in manager.nodes.list() if n.attrs["Status"]["State"] == "ready"]
    return sorted(ready) == sorted(names)


def down(root: Path) -> list[str]:
    """Take the swarm under ``root`` apart, whatever state it is in; what could not be removed, named."""
    if not (root / "state.json").exists():
        shutil.rmtree(root, ignore_errors=True)
        return []
    state = load(root)
    # Each node's containers, then the daemons: the workers together, then the manager.
    dockerds.stop({name: (pid, state.url(name)) for name, pid in state.pids.items()}, root, last=state.names[0])
    state.pids.clear()
    state.save()
    left = dockerds.teardown(root, state.network, [_cgroup_root(state, node) for node in state.network.nodes])
    if not left:
        shutil.rmtree(root, ignore_errors=True)
    return left
