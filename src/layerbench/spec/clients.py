"""Many clients on one stack: N copies of a fio workload at once, each on a placement of its own.

``clients: 4`` (or ``clients: {count: 4, shared: true}``) on a stack entry runs the
cell's fio workload in four targets of the stack's engine (four directories
natively, four containers each with its own volume, bind directory or layer),
or, ``shared``, four containers on one volume (or one directory), each with its
own file there. fio's client/server mode starts them together; a trial is one
result (IOPS and bandwidth summed, latency from the clients' histograms merged)
with one row per client. A list (``clients: [1, 2, 4]``) is an axis: the
scaling curve over client count. On a stack with a server, ``clients: 4`` is four
YCSB or pgbench clients against each instance (run/kinds/database_clients.py).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from layerbench.spec.traits import TRAITS, traits

# Placements that can be shared by several clients: one volume, one directory, or one claim (Kubernetes: its
# pods are all on the stack's node, so a ReadWriteOnce claim serves them all).
SHAREABLE = ("volume", "bind", "host-dir", "claim")
MAX_CLIENTS = 64


class ClientsSpec(BaseModel):
    """How many copies of the workload run at once, and whether they share one volume."""

    model_config = {"frozen": True, "extra": "forbid"}

    count: int = Field(
        ge=1,
        le=MAX_CLIENTS,
        description="copies of the workload at once, each in its own target (with a server: clients per instance)",
    )
    shared: bool = Field(
        default=False,
        description="one volume (or directory) for every client, each its own file there; else one each (not with "
        "a server, whose clients share it already)",
    )
    max_spread: float = Field(
        default=0.1,
        gt=0,
        lt=1,
        description="the clients-in-step check flags clients whose start or finish differs by more than this "
        "share of the runtime",
    )

    nodes: tuple[str, ...] | None = Field(
        default=None,
        min_length=2,
        description="kubernetes, swarm and docker-host: the nodes (a Docker host's unix:// URL) the clients are "
        "dealt to in turn (client 0 on the first, client 1 on the second, ...), the engine's node among them, "
        "each this machine; default: every client on the engine's node",
    )

    @model_validator(mode="before")
    @classmethod
    def _from_count(cls, value: Any) -> Any:
        return {"count": value} if isinstance(value, int) and not isinstance(value, bool) else value

    @model_validator(mode="after")
    def _nodes_each_have_a_client(self) -> ClientsSpec:
        if self.nodes is None:
            return self
        if len(set(self.nodes)) != len(self.nodes):
            raise ValueError(f"clients.nodes names a node twice: {', '.join(self.nodes)}")
        if len(self.nodes) > self.count:
            raise ValueError(f"clients.nodes: {len(self.nodes)} nodes for {self.count} clients; give each a client")
        if self.shared:
            # A claim or a volume is one node's (ReadWriteOnce, a daemon's local volume).
            raise ValueError("clients.shared: clients on several nodes cannot share one place; drop shared or nodes")
        return self

    @model_serializer(mode="wrap")
    def _without_nodes(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Clients without nodes dump as they did before the field existed: their cell ids (hashes) stay stable.
        data = handler(self)
        if data.get("nodes") is None:
            data.pop("nodes", None)
        return data

    def node_of(self, index: int, own: str | None) -> str | None:
        """The node client ``index`` runs on: dealt in turn over ``nodes``, else the engine's own."""
        return self.nodes[index % len(self.nodes)] if self.nodes else own

    def label(self) -> str:
        text = f"{self.count}client{'s' if self.count > 1 else ''}" + ("(shared)" if self.shared else "")
        return text + (f"@{'+'.join(self.nodes)}" if self.nodes else "")


def clients_refused(engine: str, placement: str, shared: bool, limits: bool) -> str | None:
    """Why a stack with clients cannot run (before the run), or None."""
    if not traits(engine).clients:
        return f"clients: not yet on {engine} (only {', '.join(k for k, t in TRAITS.items() if t.clients)})"
    if shared and placement not in SHAREABLE:
        return f"clients.shared: placement {placement} cannot be shared; one of {', '.join(SHAREABLE)} can"
    if placement == "raw":
        return "clients: a raw device has one place for data; give the stack a filesystem"
    if not traits(engine).layer and limits:
        return "clients: limits on native clients are not yet supported (each would need a cgroup of its own)"
    return None
