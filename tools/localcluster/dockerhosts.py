"""Plain Docker hosts on this host: dockerd in network namespaces of their own, no swarm, each reached by URL.

What the docker-host engine's tests need (``engine: {kind: docker-host, node: URL}``): daemons
layerbench did not start, reached over TCP as on other machines, and over a unix socket. Each node is a
network namespace (netns.py, subnet 99: the Kubernetes cluster's is 77, the swarm's 88) with a dockerd
(dockerds.py) listening at ``tcp://<its address>:2375`` (no TLS: a test network of this host only) and at
``unix://<its directory>/docker.sock``; or, given TLS files, at ``tcp://<its address>:2376`` with
``--tlsverify`` (as Docker hosts are exposed in practice: its certificate, and clients' signed by its CA
only). State lives in state.json, so `down` takes the daemons apart from another process, after a crash too.
"""

from __future__ import annotations

import json
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

from localcluster import dockerds, netns, procs

PORT = 2375
TLS_PORT = 2376
# Said explicitly: dockerd 20.10 then skips the 15 s it otherwise waits before serving TCP without TLS.
NO_TLS = ("--tls=false",)
START_LIMIT_S = 300.0


@dataclass(frozen=True)
class Tls:
    """The daemon's side of --tlsverify: the CA its clients' certificates must be signed by, its own pair."""

    ca: str
    cert: str
    key: str

    def options(self) -> tuple[str, ...]:
        return ("--tlsverify", f"--tlscacert={self.ca}", f"--tlscert={self.cert}", f"--tlskey={self.key}")


@dataclass
class State(dockerds.Daemons):
    port: int = PORT

    def socket(self, name: str) -> str:
        return f"unix://{self.node_dir(name) / 'docker.sock'}"

    def url(self, name: str) -> str:
        """The daemon over TCP, at its namespace's address: what a docker-host cell names."""
        return f"tcp://{self.address(name)}:{self.port}"

    def cgroup_root(self, name: str) -> str:
        return f"lbdocker{self.tag}-{name}"


def load(root: Path) -> State:
    return State(**json.loads((root / "state.json").read_text()))


def up(root: Path, nodes: int = 2, subnet: int = 99, tls: Tls | None = None) -> State:
    """``nodes`` answering daemons under ``root`` (which must not exist), over TLS if given; on failure,
    nothing left."""
    root.mkdir(parents=True)
    names = [f"node{i + 1}" for i in range(nodes)]
    state = State(str(root), secrets.token_hex(2), subnet, names, port=TLS_PORT if tls else PORT)
    state.save()
    try:
        netns.create(state.network)
        for node in state.network.nodes:
            hosts = [state.socket(node.name), f"tcp://{node.ip}:{state.port}"]
            namespace = f"lbdocker-{state.tag}-{node.name}"
            d = state.node_dir(node.name)
            cgroup = state.cgroup_root(node.name)
            extra = tls.options() if tls else NO_TLS
            state.pids[node.name] = dockerds.start(d, node, hosts, namespace, cgroup, extra=extra)
            state.save()
        for name in state.names:
            procs.wait_for(lambda n=name: _answers(state, n), START_LIMIT_S, f"{name}'s dockerd")
    except BaseException:
        down(root)
        raise
    return state


def _answers(state: State, name: str) -> bool:
    """Over TCP from this host, the way a docker-host cell reaches it (over TLS: its socket, which needs no
    certificate; the test asks over TLS)."""
    url = state.url(name) if state.port == PORT else state.socket(name)
    return dockerds.answers(state.pids[name], state.node_dir(name), url)


def down(root: Path) -> list[str]:
    """Take the daemons under ``root`` apart, whatever state they are in; what could not be removed, named."""
    if not (root / "state.json").exists():
        shutil.rmtree(root, ignore_errors=True)
        return []
    state = load(root)
    dockerds.stop({name: (pid, state.socket(name)) for name, pid in state.pids.items()}, root)
    state.pids.clear()
    state.save()
    left = dockerds.teardown(root, state.network, [state.cgroup_root(name) for name in state.names])
    if not left:
        shutil.rmtree(root, ignore_errors=True)
    return left
