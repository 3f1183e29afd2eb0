"""Nodes as network namespaces of this host: a bridge on the host, a veth into each node.

Every node of a local cluster gets its own network namespace (so each kubelet or dockerd has its own
address and ports, as on separate machines) and keeps the host's mount namespace (so what one node
mounts, its container runtime sees). The host is 10.250.N.1 on the bridge; node i is 10.250.N.(10+i).
"""

from __future__ import annotations

import contextlib
import subprocess
from dataclasses import dataclass
from pathlib import Path

NETNS_DIR = Path("/run/netns")


@dataclass(frozen=True)
class Node:
    name: str  # the node's name in the cluster (its hostname where the engine asks for one)
    netns: str  # its namespace's name under /run/netns
    ip: str
    veth: str  # the host's end, on the bridge

    def enter(self) -> list[str]:
        """The argv prefix that runs a command in the node's network namespace (and nothing else's)."""
        return ["nsenter", f"--net={NETNS_DIR / self.netns}", "--"]


@dataclass(frozen=True)
class Network:
    tag: str  # four hex characters: keeps interface names of several clusters apart (15 bytes at most)
    subnet: int  # the third octet of 10.250.x.0/24
    bridge: str
    nodes: tuple[Node, ...]

    @property
    def host_ip(self) -> str:
        return f"10.250.{self.subnet}.1"


def plan(tag: str, subnet: int, names: list[str]) -> Network:
    nodes = tuple(
        Node(name, f"lb{tag}-{name}", f"10.250.{subnet}.{10 + i}", f"lb{tag}h{i}") for i, name in enumerate(names)
    )
    return Network(tag, subnet, f"lb{tag}br", nodes)


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=60)


def create(net: Network) -> None:
    """The bridge with the host's address, then each node's namespace, veth and default route."""
    ip("link", "add", net.bridge, "type", "bridge")
    ip("addr", "add", f"{net.host_ip}/24", "dev", net.bridge)
    ip("link", "set", net.bridge, "up")
    for node in net.nodes:
        ip("netns", "add", node.netns)
        ip("link", "add", node.veth, "type", "veth", "peer", "name", "eth0", "netns", node.netns)
        ip("link", "set", node.veth, "master", net.bridge, "up")
        inside = ["-n", node.netns]
        ip(*inside, "addr", "add", f"{node.ip}/24", "dev", "eth0")
        ip(*inside, "link", "set", "eth0", "up")
        ip(*inside, "link", "set", "lo", "up")
        ip(*inside, "route", "add", "default", "via", net.host_ip)
        # Pods behind the node's own bridge answer the host only if the node forwards.
        subprocess.run([*node.enter(), "sysctl", "-qw", "net.ipv4.ip_forward=1"], check=True, timeout=60)


def route_to(net: Network, node: Node, cidr: str) -> None:
    """The host reaches ``cidr`` (a node's pod network) through that node."""
    ip("route", "replace", cidr, "via", node.ip, "dev", net.bridge)


def delete(net: Network) -> list[str]:
    """Every namespace, veth and the bridge (routes through it go with it); what would not go, named."""
    left = []
    for node in net.nodes:
        for args in (("link", "del", node.veth), ("netns", "del", node.netns)):
            with contextlib.suppress(subprocess.CalledProcessError):
                ip(*args)
        if (NETNS_DIR / node.netns).exists():
            left.append(f"netns {node.netns}")
    with contextlib.suppress(subprocess.CalledProcessError):
        ip("link", "del", net.bridge)
    if Path(f"/sys/class/net/{net.bridge}").exists():
        left.append(f"bridge {net.bridge}")
    return left
