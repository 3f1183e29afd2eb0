"""The experiment spec: what to vary, what to hold fixed, what to compare to.

Every model is frozen, so a Cell can be hashed, compared and used as a key.
Shorthand strings in YAML ("docker:overlay2", "xfs") are accepted and turned
into the full objects here, so the rest of the code sees one shape only.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import urllib.parse
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    SerializerFunctionWrapHandler,
    Tag,
    ValidatorFunctionWrapHandler,
    WithJsonSchema,
    field_validator,
    model_serializer,
    model_validator,
)

from layerbench.spec.clients import ClientsSpec
from layerbench.spec.databases import PgbenchWorkload, Profile, Resources, ServerSpec, Tuning, YcsbWorkload
from layerbench.spec.devices import DEFAULT_DEVICE, DEVICES, device_traits, named_kinds
from layerbench.spec.engines import ENGINES, HOST_ENGINE
from layerbench.spec.engines.runtimes import RuntimeName
from layerbench.spec.file_workloads import FioWorkload, IozoneWorkload
from layerbench.spec.link import DELAY_SCHEMA, RATE_SCHEMA, delay_text, parse_delay, parse_rate, rate_text
from layerbench.spec.sizes import ByteSize
from layerbench.spec.traits import TRAITS, traits
from layerbench.spec.transports import (
    DEFAULT_CLIENT,
    DEFAULT_TRANSPORT,
    FIO_CLIENT,
    STORAGE_HOST,
    TRANSPORTS,
    ClusterSpec,
    OwnClusterSpec,
    RemoteClient,
    client_refused,
    clients_description,
    cluster_model,
    cluster_refused,
    needs,
)
from layerbench.spec.transports import label as client_label
from layerbench.spec.transports import row as client_row
from layerbench.spec.workload_spec import STORED

# The local device kinds, from their registry (spec/devices/): one that builds nothing here leaves the
# placement's storage to what the cluster gives (a claim of a StorageClass) or a Docker host's daemon.
DeviceKind = Literal[tuple(DEVICES)]  # type: ignore[valid-type]
# The remote transports' names, from their registry (spec/transports/), as EngineKind is from the engines'.
Transport = Literal[tuple(TRANSPORTS)]  # type: ignore[valid-type]
FsType = Literal["none", "ext4", "xfs", "btrfs", "reiserfs"]
# The engines' names, from their registry (spec/engines/): a Literal, so pydantic's errors and the schema list them.
EngineKind = Literal[tuple(ENGINES)]  # type: ignore[valid-type]
Driver = Literal["overlay2", "btrfs", "vfs", "fuse-overlayfs", "devicemapper", "aufs", "overlay"]
# Engines that run a cell on one named node of a cluster (engine.node), and what names a node there.
NODE_ENGINES = {kind: t.node for kind, t in TRAITS.items() if t.node}
# A cluster's engines, whose nodes a stack's fio clients may be dealt to (clients.nodes).
CLIENT_NODE_ENGINES = tuple(k for k, t in TRAITS.items() if t.node and t.clients)
# How a docker-host engine's URL may reach its daemon (the Docker SDK's schemes, as DOCKER_HOST's).
DOCKER_HOST_SCHEMES = ("unix://", "tcp://", "ssh://")
# Each container engine's storage drivers, the first its default (its row in spec/engines/).
DRIVERS: dict[str, tuple[str, ...]] = {kind: t.drivers for kind, t in TRAITS.items() if t.drivers}
# The devicemapper driver's two modes (Docker's names): its thin pool on sparse files that dockerd attaches
# to loop devices itself (loop-lvm, its default), or on an LVM thin pool layerbench builds (direct-lvm).
DmMode = Literal["loop-lvm", "direct-lvm"]
PlacementKind = Literal["raw", "host-dir", "writable-layer", "volume", "bind", "tmpfs", "claim"]


CLAIM_SIZE = 4 * 2**30  # what a claim asks for unless placement.size says
# Validation context of cells read back from a results database: ``Cell.model_validate(d, context=STORED_CONTEXT)``.
STORED_CONTEXT = {STORED: True}


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LinkSpec(Frozen):
    """How the link to a storage host is shaped (tc on both ends of its veth pair); unshaped by default."""

    delay: Annotated[int, BeforeValidator(parse_delay), Field(gt=0), WithJsonSchema(DELAY_SCHEMA)] | None = Field(
        default=None, description="one-way delay added each way (netem): 50us, 1ms"
    )
    rate: Annotated[int, BeforeValidator(parse_rate), Field(gt=0), WithJsonSchema(RATE_SCHEMA)] | None = Field(
        default=None, description="the link's rate each way: 10gbit, 500mbit"
    )

    def label(self) -> str:
        parts = [f"+{delay_text(self.delay)}" if self.delay else "", rate_text(self.rate) if self.rate else ""]
        return ",".join(p for p in parts if p)


class RemoteSpec(Frozen):
    """The device reached over a network: exported by a storage host (its own network namespace) and
    attached here as a block device by a transport's client."""

    transport: Transport = DEFAULT_TRANSPORT
    client: RemoteClient = Field(default=DEFAULT_CLIENT, description=clients_description())
    link: LinkSpec = LinkSpec()
    cluster: ClusterSpec | OwnClusterSpec | None = Field(
        default=None,
        description="a clustered transport (rbd): the cluster layerbench builds, its OSDs and its pool's replicas "
        "(3 OSDs, size 3 unless given); or, with `conf`, one the user runs (its pool; layerbench makes and "
        "removes only an image of its own there)",
    )

    @field_validator("cluster", mode="wrap")
    @classmethod
    def _one_kind_of_cluster(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        return cluster_model(value).model_validate(value) if isinstance(value, dict) else handler(value)

    @model_validator(mode="after")
    def _client_is_the_transports(self) -> RemoteSpec:
        clustered = cluster_refused(self.transport, self.cluster is not None)
        refused = client_refused(self.transport, self.client) or clustered
        if refused:
            raise ValueError(refused)
        return self

    @model_serializer(mode="wrap")
    def _unclustered_as_before(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A transport without a cluster dumps as it did before ``cluster`` existed: cell ids stay stable.
        data = handler(self)
        if data.get("cluster") is None:
            data.pop("cluster", None)
        return data

    def cluster_built(self) -> ClusterSpec | None:
        """The cluster a clustered transport builds (the spec's, or its transport's default); None for others,
        and for a cluster the user runs (``own_cluster``)."""
        if isinstance(self.cluster, OwnClusterSpec):
            return None
        model = TRANSPORTS[self.transport].cluster
        return self.cluster or (model() if model is not None else None)

    def beneath(self) -> tuple[RemoteSpec, ...]:
        """The same export on the clusters a finding judges this one's against, nearest first
        (``ClusterSpec.beneath``); none where no cluster is named, or it is one the user runs."""
        built = self.cluster_built() if self.cluster is not None else None
        return tuple(self.model_copy(update={"cluster": c}) for c in (built.beneath() if built else ()))

    def own_cluster(self) -> OwnClusterSpec | None:
        """The cluster the user runs, where the spec names one (its conf)."""
        return self.cluster if isinstance(self.cluster, OwnClusterSpec) else None

    def host_needs(self) -> list[str]:
        """The features of this host (HostCaps.remote) the device needs: a storage host and the client's, or
        what the cell's cluster says instead."""
        wanted = [STORAGE_HOST, *needs(self.transport, self.client)]
        cluster = self.own_cluster() or self.cluster_built()
        return cluster.host_needs(wanted) if cluster is not None else wanted

    def label(self) -> str:
        name = client_label(self.transport, self.client)
        cluster = self.own_cluster() or self.cluster_built()
        parts = [p for p in (cluster.label() if cluster else "", self.link.label()) if p]
        return f"{name}({';'.join(parts)})" if parts else name

    def reached_by_fio(self) -> bool:
        """Whether the client is fio's own engine for the transport: no block device here."""
        return self.client == FIO_CLIENT

    def client_name(self) -> str:
        """How a refusal names the client ("nbdfuse", "fio's nbd engine")."""
        return client_row(self.transport, self.client).name


class DeviceSpec(Frozen):
    """The block device at the bottom of the stack, here or (``remote``) on a storage host."""

    kind: DeviceKind = DEFAULT_DEVICE
    size: ByteSize = Field(default=2 * 1024**3, description="loop and zram; an RBD image on a Ceph cluster you run")
    path: str | None = Field(default=None, description="block: the device to format (required)")
    direct_io: bool = Field(default=True, description="loop: --direct-io=on (off only to demo the trap)")
    remote: RemoteSpec | None = Field(
        default=None, description="export it from a storage host and attach it over a network"
    )

    @model_validator(mode="after")
    def _block_needs_path(self) -> DeviceSpec:
        kind = device_traits(self.kind)
        if kind.named and not self.path:
            raise ValueError(f"device.kind {self.kind!r} needs device.path, the device to format")
        if not kind.named and self.path:
            raise ValueError(f"device.path is only for kind {' or '.join(map(repr, named_kinds()))}, not {self.kind!r}")
        if not kind.builds and self.remote:
            raise ValueError(f"device.kind {self.kind!r} builds nothing here, so nothing to export: drop device.remote")
        cluster = self.remote.cluster_built() if self.remote else None
        if kind.named and cluster is not None and cluster.osds > 1:
            raise ValueError(
                f"device.kind {self.kind!r} names one device, and device.remote.cluster.osds {cluster.osds} needs one "
                "per OSD: use a kind layerbench makes (loop, zram), or cluster.osds 1"
            )
        return self

    @model_serializer(mode="wrap")
    def _local_without_remote(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A local device dumps as it did before ``remote`` existed: cell ids (hashes of the dump) stay stable.
        data = handler(self)
        if data.get("remote") is None:
            data.pop("remote", None)
        return data

    def label(self) -> str:
        kind = device_traits(self.kind)
        if not kind.builds:
            return self.kind
        if kind.named and self.path:
            local = self.path
        else:
            local = self.kind if self.direct_io or not kind.file_backed else f"{self.kind}(buffered)"
        return f"{local}@{self.remote.label()}" if self.remote else local


class FilesystemSpec(Frozen):
    type: FsType = "none"
    mkfs_options: tuple[str, ...] = ()
    mount_options: tuple[str, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, value: Any) -> Any:
        return {"type": value} if isinstance(value, str) else value

    def label(self) -> str:
        extra = ",".join(self.mount_options)
        return f"{self.type}({extra})" if extra else self.type


class DockerTls(Frozen):
    """How to reach a Docker host over TLS, as ``docker --tlsverify`` does: the daemon's certificate must be
    signed by ``ca`` (and name the host), and the client shows its own certificate and key."""

    ca: str = Field(description="the CA certificate (PEM) that signed the daemon's certificate (--tlscacert)")
    cert: str | None = Field(
        default=None, description="this client's certificate (PEM), signed by a CA the daemon trusts (--tlscert)"
    )
    key: str | None = Field(default=None, description="this client's private key (PEM) (--tlskey)")

    @model_validator(mode="after")
    def _cert_with_key(self) -> DockerTls:
        if (self.cert is None) != (self.key is None):
            raise ValueError("tls: cert and key go together (the client's certificate and its private key)")
        return self

    def fragment(self) -> str:
        """The files, as the fragment of the daemon's address (engines/docker_host/host_api.py reads it back)."""
        return urllib.parse.urlencode({k: v for k, v in self.model_dump().items() if v is not None})


class EngineSpec(Frozen):
    kind: EngineKind = HOST_ENGINE
    driver: Driver | None = None
    mode: DmMode | None = Field(
        default=None,
        description="devicemapper only: loop-lvm (sparse files on loop devices, Docker's default) or direct-lvm"
        " (an LVM thin pool on a block device layerbench makes)",
    )
    node: str | None = Field(
        default=None,
        description="kubernetes, swarm and docker-host only (and required there): the node the pod or service is "
        "pinned to, by its name in the cluster (a swarm node's hostname); a docker-host's daemon URL "
        "(unix:///PATH/docker.sock, tcp://HOST:2375, tcp://HOST:2376 with tls, ssh://USER@HOST)",
    )
    runtime: RuntimeName | None = Field(
        default=None,
        description="docker and podman only: the OCI runtime of the cell's containers (runc, crun, or runsc: "
        "gVisor), registered with layerbench's private daemon; absent: the engine's default, runc",
    )
    seccomp: str | None = Field(
        default=None,
        description="docker only: the private daemon's default seccomp profile, a JSON file (dockerd "
        "--seccomp-profile), e.g. your production daemon's; absent: dockerd's built-in one",
    )
    tls: DockerTls | None = Field(
        default=None,
        description="docker-host with a tcp:// URL only: verify the daemon's certificate against tls.ca and show "
        "this client's (tls.cert, tls.key), as docker --tlsverify does",
    )

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, value: Any) -> Any:
        if isinstance(value, str):
            kind, _, driver = value.partition(":")
            return {"kind": kind, "driver": driver or None}
        return value

    @model_validator(mode="after")
    def _driver_matches_kind(self) -> EngineSpec:
        engine = traits(self.kind)
        if not engine.layer and self.driver:
            raise ValueError(f"engine {self.kind!r} takes no storage driver")
        if engine.drivers and not self.driver:
            object.__setattr__(self, "driver", engine.drivers[0])
        if engine.drivers and self.driver not in engine.drivers:
            allowed = ", ".join(repr(d) for d in engine.drivers)
            raise ValueError(f"{self.kind} has no storage driver {self.driver!r}; allowed values: {allowed}")
        if self.driver == "devicemapper" and self.mode is None:
            object.__setattr__(self, "mode", "loop-lvm")  # what dockerd does without a thin pool
        if (engine.node is not None) != (self.node is not None):
            raise ValueError(
                f"engine {self.kind} needs node: the node to run on ({engine.node})"
                if engine.node is not None
                else f"node is the kubernetes engine's and the swarm engine's (the node a pod or a service is "
                f"pinned to), and the docker-host engine's (its daemon's URL); {self.kind} has none"
            )
        if engine.daemon_url and not _docker_url(self.node or ""):
            raise ValueError(
                f"engine docker-host's node {self.node!r} is not a Docker daemon's URL: it starts with one of "
                f"{', '.join(DOCKER_HOST_SCHEMES)} (as DOCKER_HOST does), e.g. tcp://10.0.0.5:2375"
            )
        if self.tls is not None and not (engine.daemon_url and (self.node or "").startswith("tcp://")):
            raise ValueError("tls is for engine docker-host with a tcp:// URL (e.g. node: tcp://10.0.0.5:2376)")
        if self.runtime is not None and not traits(self.kind).runtimes:
            takers = " and ".join(k for k, t in TRAITS.items() if t.runtimes)
            raise ValueError(f"runtime is for engines {takers} (the daemons layerbench starts); {self.kind} has none")
        if self.seccomp is not None and not traits(self.kind).seccomp:
            raise ValueError(f"seccomp is the docker engine's (its daemon's default profile); {self.kind} has none")
        if self.mode is not None and self.driver != "devicemapper":
            named = f"{self.kind}:{self.driver}" if self.driver else self.kind
            raise ValueError(
                f"mode {self.mode!r} is the devicemapper driver's (loop-lvm or direct-lvm); {named} has none"
            )
        return self

    @model_serializer(mode="wrap")
    def _without_mode(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Engines without a mode dump as they did before it existed: their cell ids (hashes) stay stable.
        data = handler(self)
        for optional in ("mode", "node", "tls", "runtime", "seccomp"):
            if data.get(optional) is None:
                data.pop(optional, None)
        return data

    @property
    def daemon(self) -> str | None:
        """A docker-host's daemon as engines/docker_host/host_api.py reaches it: its URL, with its TLS files (if any) as
        the URL's fragment, so that one string names the daemon and how to trust it, in the ledger too."""
        if self.node is None or self.tls is None:
            return self.node
        return f"{self.node}#{self.tls.fragment()}"

    def label(self) -> str:
        base = f"{self.kind}:{self.driver}" if self.driver else self.kind
        base += f"+{self.runtime}" if self.runtime else ""
        detail = self.mode or self.node
        return f"{base}({detail})" if detail else base


def _docker_url(url: str) -> bool:
    """A URL the Docker SDK takes as DOCKER_HOST: one of its schemes, and something after it."""
    return any(url.startswith(scheme) and len(url) > len(scheme) for scheme in DOCKER_HOST_SCHEMES)


class PlacementSpec(Frozen):
    kind: PlacementKind = "host-dir"
    storage_class: str | None = Field(
        default=None,
        description="claim only (and required there): the cluster's StorageClass the claim asks for",
    )
    size: ByteSize | None = Field(default=None, description="claim only: the storage the claim asks for (4GiB)")

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, value: Any) -> Any:
        return {"kind": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _claim_has_a_class(self) -> PlacementSpec:
        if self.kind == "claim" and not self.storage_class:
            raise ValueError("placement claim needs storage_class: the cluster's StorageClass to ask for")
        if self.kind != "claim" and (self.storage_class or self.size is not None):
            raise ValueError(f"storage_class and size are placement claim's; {self.kind} has none")
        if self.kind == "claim" and self.size is None:
            object.__setattr__(self, "size", CLAIM_SIZE)
        return self

    @model_serializer(mode="wrap")
    def _kind_alone(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Placements other than a claim dump as they did before it existed: their cell ids (hashes) stay stable.
        data = handler(self)
        for optional in ("storage_class", "size"):
            if data.get(optional) is None:
                data.pop(optional, None)
        return data

    def label(self) -> str:
        return f"claim({self.storage_class})" if self.kind == "claim" else self.kind


def _workload_kind(value: Any) -> Any:
    # An unknown kind goes back to pydantic as it is, which reports it with the kinds allowed.
    return value.get("kind", "fio") if isinstance(value, dict) else getattr(value, "kind", "fio")


WORKLOAD_KINDS = ("fio", "iozone", "ycsb", "pgbench")
Workload = Annotated[
    Annotated[FioWorkload, Tag("fio")]
    | Annotated[IozoneWorkload, Tag("iozone")]
    | Annotated[YcsbWorkload, Tag("ycsb")]
    | Annotated[PgbenchWorkload, Tag("pgbench")],
    Discriminator(_workload_kind),
]
FileWorkload = FioWorkload | IozoneWorkload  # what runs on a stack without a server
DbWorkload = YcsbWorkload | PgbenchWorkload


class Limits(Frozen):
    """Resource limits applied to the container (issue: DB profiles extend this)."""

    cpuset: str | None = None
    cpus: float | None = Field(default=None, gt=0)
    memory: ByteSize | None = None
    read_bps: ByteSize | None = None
    write_bps: ByteSize | None = None

    def label(self) -> str:
        parts = [f"{k}={_short(v)}" for k, v in self.model_dump(exclude_none=True).items()]
        return f"[{','.join(parts)}]" if parts else ""


def _short(value: object) -> str:
    if isinstance(value, int) and value >= 2**20:
        return f"{value / 2**20:.0f}M"
    return str(value)


class StackSpec(Frozen):
    device: DeviceSpec
    filesystem: FilesystemSpec
    engine: EngineSpec
    placement: PlacementSpec
    limits: Limits = Limits()
    server: ServerSpec | None = Field(default=None, description="database servers run on the placement")
    instances: int = Field(default=1, ge=1, le=64, description="servers at once, each with its own client")
    profile: Profile = Field(default="none", description="seed 000's cgroup profiles: each container's share")
    tuning: Tuning = Field(
        default="default",
        description="seed 001's container tunings (a file workload's container takes seccomp-unconfined only)",
    )
    clients: ClientsSpec | None = Field(
        default=None,
        description="the workload in this many targets at once (4, or {count: 4, shared: true}); on a stack with "
        "a server, this many YCSB or pgbench clients against each instance; see docs/how-to/many-clients.md",
    )

    @model_validator(mode="after")
    def _database_fields_need_a_server(self) -> StackSpec:
        if self.server is None:
            extra = [f for f in ("instances", "profile") if getattr(self, f) != StackSpec.model_fields[f].default]
            if extra:
                raise ValueError(f"{', '.join(extra)}: only for stacks with a server (set server: postgres or redis)")
        elif self.clients is not None and self.clients.shared:
            raise ValueError("clients.shared: a database's clients share its server already; give a count alone")
        return self

    @model_validator(mode="after")
    def _client_nodes_are_the_engines(self) -> StackSpec:
        nodes = self.clients.nodes if self.clients is not None else None
        if not nodes:
            return self
        if self.engine.kind not in CLIENT_NODE_ENGINES:
            raise ValueError(
                f"clients.nodes: for engines {', '.join(CLIENT_NODE_ENGINES)} (a cluster's nodes, Docker hosts' "
                f"URLs), not {self.engine.kind}"
            )
        if self.server is not None:
            raise ValueError("clients.nodes: a database's clients run on this host; nodes is for fio's clients")
        if self.engine.node not in nodes:
            raise ValueError(
                f"clients.nodes: {', '.join(nodes)} lacks the engine's node {self.engine.node!r} "
                "(the stack's node: list it among them)"
            )
        return self

    @model_serializer(mode="wrap")
    def _without_clients(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Stacks without clients dump as they did before the field existed: their cell ids (hashes) stay stable.
        data = handler(self)
        if data.get("clients") is None:
            data.pop("clients", None)
        return data

    def node_engines(self) -> list[EngineSpec]:
        """The engine on each node its clients are dealt to (``clients.nodes``), the engine's own first; else the
        engine alone."""
        nodes = self.clients.nodes if self.clients is not None and self.clients.nodes else ()
        others = [self.engine.model_copy(update={"node": n}) for n in nodes if n != self.engine.node]
        return [self.engine, *others]

    def label(self) -> str:
        parts = [
            self.device.label(),
            self.filesystem.label(),
            self.engine.label(),
            self.placement.label(),
        ]
        text = "/".join(parts) + self.limits.label()
        if self.server is not None:
            text += f"/{self.server.label()}"
            text += f"x{self.instances}" if self.instances > 1 else ""
            text += f"[{self.profile}]" if self.profile != "none" else ""
        text += f"/{self.clients.label()}" if self.clients is not None else ""
        return text + (f"<{self.tuning}>" if self.tuning != "default" else "")


class Cell(Frozen):
    """One point of the matrix: a full stack and one workload."""

    stack: StackSpec
    workload: Workload

    @functools.cached_property  # the matrix asks for it several times per cell; a cell never changes
    def id(self) -> str:
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    def label(self) -> str:
        return f"{self.stack.label()} · {self.workload.label()}"


# A budget: a duration of trials (90s, 6m, 1.5h) or a count of trials (200).
BUDGET = re.compile(r"[0-9]+(\.[0-9]+)?(s|m|h)|[1-9][0-9]*")


class Trials(Frozen):
    """How many trials per cell: a fixed count, until a precision target is met, or until the run's
    comparisons are decided.

    With ``budget`` set (``6m``, ``1h``: the trials' own time; or a count of trials, ``100``), every cell gets
    ``min_repetitions`` rounds (2), then each round goes to the cells of the comparisons still undecided that
    this host can decide within what is left, until every comparison is decided, the budget is spent, what is
    open cannot be decided within it, or ``repetitions`` (the cap on rounds) is reached. With ``precision``
    set (e.g. 0.03 for an interval within ±3% of the mean), rounds continue for the cells not yet precise
    enough, between ``min_repetitions`` (3) and ``repetitions``. With neither, every cell gets exactly
    ``repetitions`` trials (a paper's fixed protocol: 002 used 10). Every interval is valid whenever the run
    stops (docs/explanation/statistics.md).
    """

    repetitions: int = Field(default=1, ge=1, le=1000)
    precision: float | None = Field(default=None, gt=0, lt=1)
    budget: str | None = Field(
        default=None,
        json_schema_extra={"pattern": BUDGET.pattern},
        description="decide by comparisons within this budget: a duration of trials (90s, 6m, 1.5h) or a count "
        "of trials (100); rounds go where a verdict is still open",
    )
    min_repetitions: int | None = Field(
        default=None,
        ge=2,
        le=1000,
        description="the rounds every cell gets before a precision target or a budget chooses (default: 3 under "
        "a precision target; 2 under a budget, whose intervals borrow the run's other comparisons' degrees of "
        "freedom from the first look on)",
    )
    metric: Literal["headline", "iops", "bw", "ops"] = Field(
        default="headline",
        description="what the precision target judges: each cell's headline (IOPS for random I/O, MiB/s for "
        "sequential, ops/s for databases and personalities), or one metric for all",
    )
    rebuild: Literal["once", "every-round"] = Field(
        default="once",
        description="once: each stack built and prepared once and held across rounds, where it can be (held "
        "stacks of one device and filesystem share them while it has room; a device you named, a remote device "
        "and a guest are rebuilt per visit); every-round: every stack built afresh every round, so differences "
        "between builds fall into the intervals too (docs/explanation/protocol.md)",
    )
    again_if_contended: int = Field(
        default=0,
        ge=0,
        le=10,
        description="a trial during which other processes used the CPU (the contended check's flag: at least "
        "half a core, or a tenth of the host's) is measured again, at most this many times, each once the host "
        "is quiet (waiting at most 10 s); each disturbed attempt is kept in the trial's record (info.disturbed), "
        "and the last attempt stands, flagged if it was disturbed too; 0 (default): never, as it narrowed no "
        "interval under a CPU hog (docs/explanation/protocol.md)",
    )

    @field_validator("budget", mode="before")
    @classmethod
    def _budget_text(cls, value: Any) -> Any:
        text = str(value).strip() if value is not None else None
        if text is not None and not BUDGET.fullmatch(text):
            raise ValueError(f"{value!r} is neither a duration of trials (90s, 6m, 1.5h) nor a count of trials (200)")
        return text

    @model_validator(mode="after")
    def _cap_above_min(self) -> Trials:
        adaptive = self.precision is not None or self.budget is not None
        if adaptive and self.repetitions < self.first_rounds:
            raise ValueError("trials.repetitions (the cap) must be at least trials.min_repetitions")
        if self.precision is not None and self.budget is not None:
            raise ValueError("trials.precision and trials.budget are two stopping rules: give one")
        return self

    @property
    def budget_seconds(self) -> float | None:
        """The budget as the trials' own time, or None (no budget, or a count of trials)."""
        if self.budget is None or self.budget.isdigit():
            return None
        return float(self.budget[:-1]) * {"s": 1, "m": 60, "h": 3600}[self.budget[-1]]

    @property
    def first_rounds(self) -> int:
        """``min_repetitions``, or its default for the rule."""
        if self.min_repetitions is not None:
            return self.min_repetitions
        return 2 if self.budget is not None else 3

    @property
    def budget_trials(self) -> int | None:
        return int(self.budget) if self.budget is not None and self.budget.isdigit() else None

    @property
    def sequential(self) -> bool:
        """Whether rounds go where comparisons are undecided (a budget): each comparison is then judged at its
        looks (analysis/looks.py), which hold at any stop (a precision target keeps its Bonferroni over the looks)."""
        return self.budget is not None


class StackEntry(BaseModel):
    """One entry of ``stacks:``; any field given as a list becomes an axis."""

    model_config = ConfigDict(extra="forbid")

    device: Any = None
    filesystem: Any = None
    engine: Any = None
    placement: Any = None
    limits: Any = None
    server: Any = None
    instances: Any = None
    profile: Any = None
    tuning: Any = None
    clients: Any = None


class Experiment(Frozen):
    name: str = Field(min_length=1, max_length=80)
    description: str = ""
    device: DeviceSpec = DeviceSpec()
    stacks: tuple[dict[str, Any], ...] = Field(min_length=1)
    workloads: tuple[Workload, ...] = Field(min_length=1)
    baseline: dict[str, Any] | None = Field(
        default=None,
        description="fields a stack must match to be the baseline (default: the first)",
    )
    trials: Trials = Trials()
    resources: Resources = Field(
        default=Resources(),
        description="what resource profiles divide among containers (default: this host; bandwidth measured)",
    )
    profile: Literal["none", "cpu"] = Field(
        default="none",
        description="cpu: perf records the whole machine during each cell's first trial (folded stacks and"
        " counters kept with it), for flame graphs and `advise`. Not a stack's `profile` (seed 000's shares)",
    )
    profile_hz: int = Field(
        default=99,
        ge=1,
        le=4999,
        description="profile: cpu's samples a second per CPU (99: off the timer tick; more for short trials)",
    )
    latency_log: bool = Field(
        default=False,
        description="fio writes its latency log in every trial of a workload layerbench builds the command line"
        " for (write_lat_log averaged per interval), for the latency-over-time figure; it costs fio 1-3% of its"
        " IOPS where its CPU is the limit (bench/transparency.py), so it is off unless asked",
    )
    emulation: Literal["refuse", "allow"] = Field(
        default="refuse",
        description="VM cells where KVM cannot run a guest: refused, or run emulated (function only, flagged)",
    )

    @field_validator("stacks", mode="before")
    @classmethod
    def _entries_known(cls, value: Any) -> Any:
        if isinstance(value, list):
            for i, entry in enumerate(value):
                if not isinstance(entry, dict):
                    raise ValueError(f"stacks[{i}] must be a mapping of device/filesystem/engine/placement")
                StackEntry.model_validate(entry)
        return value

    @model_validator(mode="after")
    def _unique_workload_names(self) -> Experiment:
        names = [w.name for w in self.workloads]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"workload names must be unique; repeated: {', '.join(dupes)}")
        return self

    def digest(self) -> str:
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()
