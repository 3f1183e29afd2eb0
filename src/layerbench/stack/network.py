"""A private bridge network for database containers, reachable from the host only.

The private daemons run without iptables and without Docker's default bridge;
a user-defined bridge network still works there: the host holds the gateway
address on the bridge and reaches each container at its own address, with no
NAT and no userland proxy in the way (clients run on the host, as seed 000's
client node did over its link). Nothing outside the host routes to it.

Docker removes the bridge's kernel link when the network is removed, but a
daemon that dies first leaves the link behind, so the ledger records its name.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from docker.errors import NotFound

from layerbench.proc import Runner
from layerbench.stack.dockerd import API_ERRORS, ApiDaemon
from layerbench.stack.ledger import tracked
from layerbench.stack.target import BuildContext


@dataclass(frozen=True)
class Network:
    name: str
    id: str
    bridge: str  # the kernel link, br-<first 12 of the id>
    gateway: str


def bridge_name(network_id: str) -> str:
    return f"br-{network_id[:12]}"


@contextmanager
def bridge_network(engine: ApiDaemon, ctx: BuildContext) -> Iterator[Network]:
    name = f"lb-net-{uuid.uuid4().hex[:8]}"

    def create(rid: int) -> Network:
        net = engine.client.networks.create(name, driver="bridge", labels={"layerbench.run": ctx.run_id})
        net.reload()
        config = (net.attrs.get("IPAM", {}).get("Config") or [{}])[0]
        ctx.ledger.update(rid, bridge=bridge_name(net.id))
        return Network(name, net.id, bridge_name(net.id), str(config.get("Gateway", "")))

    def remove(network: Network) -> None:
        with contextlib.suppress(NotFound, *API_ERRORS):  # a dead daemon cannot answer: the link goes below
            engine.client.networks.get(network.id).remove()
        delete_link(network.bridge, ctx.runner)

    with tracked(ctx.ledger, "network", name, create, remove, socket=str(engine.socket)) as network:
        yield network


def delete_link(bridge: str, runner: Runner) -> None:
    """Remove the bridge's kernel link if it is still there (its daemon died before removing it)."""
    if bridge.startswith("br-") and Path(f"/sys/class/net/{bridge}").exists():
        runner(["ip", "link", "delete", bridge], timeout=30).check()
