"""The database side of a spec: servers as a stack layer, clients as workloads.

A stack with a ``server`` runs that many database servers (``instances``) on
its placement, natively or one per container; its workloads are clients
(YCSB, pgbench) run against every instance at once. The data set the servers
are loaded with belongs to the server, because every workload on it reads it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    WithJsonSchema,
    model_serializer,
    model_validator,
)

from layerbench.spec.sizes import SIZE_SCHEMA, parse_size
from layerbench.spec.workload_spec import WorkloadSpec

if TYPE_CHECKING:
    from layerbench.spec.feasibility import HostCaps
    from layerbench.spec.models import StackSpec

ByteSize = Annotated[int, BeforeValidator(parse_size), Field(ge=0), WithJsonSchema(SIZE_SCHEMA)]

ServerKind = Literal["postgres", "redis", "cassandra", "ferretdb", "image"]
# What a client speaks: each server kind one, an image server the one its spec's ``client`` names.
Protocol = Literal["postgres", "redis", "cql", "mongodb"]
KIND_PROTOCOL: dict[str, str] = {"postgres": "postgres", "redis": "redis", "cassandra": "cql", "ferretdb": "mongodb"}
ImageClient = Literal["ycsb-postgres", "ycsb-redis", "ycsb-cql", "ycsb-mongodb"]
CLIENT_PROTOCOL: dict[str, str] = {"ycsb-postgres": "postgres", "ycsb-redis": "redis", "ycsb-cql": "cql",
                                   "ycsb-mongodb": "mongodb"}  # fmt: skip
# Where the official images keep their data, unless the spec's data_path says otherwise.
IMAGE_DATA_PATH: dict[str, str] = {
    "postgres": "/var/lib/postgresql/data",
    "redis": "/data",
    "cql": "/var/lib/cassandra",
    "mongodb": "/data/db",
}
MIB, GIB = 2**20, 2**30
# What a server is sized to unless the spec says: Cassandra is a JVM with a heap of half of it
# (1 GiB of heap is about 1.5 GiB resident), so a few of them fill a small host. An image server's
# memory is its container's memory limit (how it sizes itself inside is the image's business).
DEFAULT_MEMORY: dict[str, int] = {
    "postgres": 256 * MIB,
    "redis": 256 * MIB,
    "cassandra": 2 * GIB,
    "ferretdb": 256 * MIB,
    "image": GIB,
}
MIN_MEMORY: dict[str, int] = {"cassandra": GIB}  # a 512 MiB heap: below it Cassandra runs out of heap loading
Consistency = Literal["one", "two", "three", "quorum", "all", "local_one", "local_quorum"]
YcsbMix = Literal["a", "b", "c", "d", "e", "f", "write-heavy", "read-heavy"]
Distribution = Literal["zipfian", "uniform", "latest"]
# Seed 000's Table 2: which resources each container is given a share of.
Profile = Literal["none", "CPU", "MEM", "CPU+MEM", "BW", "ALL"]
# Seed 001's container tunings, each alone, and "all" of them together (as 001 measured too).
Tuning = Literal["default", "cpuset", "host-network", "seccomp-unconfined", "all"]
TUNINGS_IN_ALL = frozenset({"cpuset", "host-network", "seccomp-unconfined"})


def tuned(tuning: str, part: str) -> bool:
    """Does the stack's ``tuning`` set ``part`` (one of seed 001's), alone or among all of them?"""
    return tuning == part or (tuning == "all" and part in TUNINGS_IN_ALL)


PROFILE_RESOURCES: dict[str, frozenset[str]] = {
    "none": frozenset(),
    "CPU": frozenset({"cpu"}),
    "MEM": frozenset({"memory"}),
    "CPU+MEM": frozenset({"cpu", "memory"}),
    "BW": frozenset({"bandwidth"}),
    "ALL": frozenset({"cpu", "memory", "bandwidth"}),
}


def _env_list(value: Any) -> Any:
    """An environment as Docker takes it (KEY=VALUE strings), from a mapping or a list; hashable, in order."""
    if isinstance(value, dict):
        return tuple(f"{k}={v}" for k, v in sorted(value.items()))
    if isinstance(value, list | tuple) and not all(isinstance(v, str) and "=" in v for v in value):
        raise ValueError("env: a mapping, or KEY=VALUE strings")
    return value


ENV_SCHEMA = {
    "anyOf": [
        {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}},
        {"type": "array", "items": {"type": "string", "pattern": "="}},
    ]
}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ServerSpec(_Frozen):
    """A database server and the data set it is loaded with before its trials."""

    kind: ServerKind
    image: str | None = Field(
        default=None,
        min_length=1,
        description="kind image: a registry reference (mongo:7, pulled by the engine's daemon) or a "
        "docker-archive file (docker save's output, loaded without a registry)",
    )
    port: int | None = Field(
        default=None, ge=1, le=65535, description="kind image: the port it serves in its container"
    )
    client: ImageClient | None = Field(default=None, description="kind image: the client that talks to it")
    data_path: str | None = Field(
        default=None,
        pattern=r"^/",
        description="kind image: where it keeps its data in the container (the placement goes there); default: "
        "the official image's (/data/db, /var/lib/postgresql/data, /data, /var/lib/cassandra)",
    )
    env: Annotated[tuple[str, ...], BeforeValidator(_env_list), WithJsonSchema(ENV_SCHEMA)] = Field(
        default=(), description="kind image: its container's environment (a mapping, or KEY=VALUE strings)"
    )
    command: tuple[str, ...] | None = Field(default=None, description="kind image: arguments instead of its CMD")
    memory: ByteSize = Field(
        default=0,  # unset: DEFAULT_MEMORY of its kind (an explicit 0 is refused by ge)
        ge=1,
        description="what the server is sized to (PostgreSQL shared_buffers = 1/4, Redis maxmemory = 3/4, "
        "Cassandra's heap = 1/2, at least 1 GiB; FerretDB has no such setting, SQLite's cache is its own); "
        "a container memory limit, when smaller, takes its place; default 256 MiB, Cassandra 2 GiB",
    )
    records: int | None = Field(default=None, ge=1, le=10**9, description="YCSB records loaded per instance")
    data: float | None = Field(
        default=None,
        gt=0,
        le=100,
        description="instead of records: the data set as a multiple of the server's memory "
        "(0.5 memory-bound, 4 disk-bound)",
    )
    fieldcount: int = Field(default=10, ge=1, le=100)
    fieldlength: int = Field(default=100, ge=1, le=10**6)
    load_threads: int = Field(default=4, ge=1, le=250, description="YCSB client threads of the load phase")
    scale: int = Field(default=10, ge=1, le=10**5, description="pgbench -i scale (100,000 accounts each)")
    persistence: Literal["aof-everysec", "aof-always", "rdb", "none"] = Field(
        default="aof-everysec", description="Redis only: appendfsync everysec is Redis's own recommendation"
    )

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"kind": value}
        if isinstance(value, dict) and "image" in value and "kind" not in value:
            return {"kind": "image", **value}
        return value

    @model_validator(mode="after")
    def _image_fields(self) -> ServerSpec:
        given = [f for f in IMAGE_FIELDS if getattr(self, f) not in (None, ())]
        if self.kind != "image" and given:
            raise ValueError(f"{', '.join(given)}: only a server of kind image (one with an image) takes these")
        if self.kind == "image":
            missing = [f for f in ("image", "port", "client") if getattr(self, f) is None]
            if missing:
                raise ValueError(
                    f"an image server needs {', '.join(missing)} "
                    "(e.g. image: mongo:7, port: 27017, client: ycsb-mongodb)"
                )
            if self.data_path is None:
                object.__setattr__(self, "data_path", IMAGE_DATA_PATH[self.protocol])
        return self

    @model_serializer(mode="wrap")
    def _without_image_fields(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Servers of a kind dump as they did before image servers: their cells' ids (hashes) stay stable.
        data: dict[str, Any] = handler(self)
        if self.kind != "image":
            for name in IMAGE_FIELDS:
                data.pop(name, None)
        return data

    @property
    def protocol(self) -> str:
        """What its clients speak: the kind's own, or an image's client's."""
        if self.kind == "image":
            assert self.client is not None  # by _image_fields
            return CLIENT_PROTOCOL[self.client]
        return KIND_PROTOCOL[self.kind]

    @property
    def name(self) -> str:
        """The kind, or the image by its reference (an archive by its file name)."""
        if self.kind != "image":
            return self.kind
        assert self.image is not None
        return Path(self.image).name if is_archive(self.image) else self.image

    @model_validator(mode="after")
    def _memory_of_kind(self) -> ServerSpec:
        if self.memory == 0:
            object.__setattr__(self, "memory", DEFAULT_MEMORY[self.kind])
        least = MIN_MEMORY.get(self.kind, 1)
        if self.memory < least:
            raise ValueError(f"memory: {self.kind} needs at least {least // MIB} MiB, got {self.memory // MIB} MiB")
        return self

    @model_validator(mode="after")
    def _one_size(self) -> ServerSpec:
        if self.records is not None and self.data is not None:
            raise ValueError("give records or data (a multiple of memory), not both")
        if self.records is None and self.data is None:
            object.__setattr__(self, "records", 10_000)
        return self

    @property
    def record_bytes(self) -> int:
        return self.fieldcount * self.fieldlength

    @property
    def record_count(self) -> int:
        """Records per instance. A multiple of memory is of the server's own ``memory``, not of a
        container's limit: cells with and without a memory limit must hold the same data."""
        if self.records is not None:
            return self.records
        assert self.data is not None  # one of the two, by _one_size
        return max(1, int(self.data * self.memory / self.record_bytes))

    def label(self) -> str:
        size = f"{self.records}rec" if self.records is not None else f"{self.data:g}xmem"
        return f"{self.name}({size})"


class Resources(_Frozen):
    """What the resource profiles divide among the containers (default: this host, and the device as measured)."""

    cpus: float | None = Field(default=None, gt=0, le=4096)
    memory: ByteSize | None = None
    read_bps: ByteSize | None = None
    write_bps: ByteSize | None = None


class YcsbWorkload(_Frozen, WorkloadSpec):
    """The YCSB reference client against every instance of the stack's server, one client each (or the stack's
    ``clients`` each, every one with these threads and this target rate)."""

    kind: Literal["ycsb"] = "ycsb"
    name: str = Field(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_.-]+$")
    mix: YcsbMix = Field(
        default="a",
        description="core workloads a-f, or seed 002's write-heavy (100% insert) and read-heavy (95% read, 5% update)",
    )
    distribution: Distribution | None = Field(default=None, description="request distribution; default: the mix's own")
    threads: int = Field(default=8, ge=1, le=1024, description="client threads per instance (per client)")
    runtime_s: float = Field(default=20.0, gt=0, le=86400, description="measured run phase (maxexecutiontime)")
    warmup_s: float = Field(default=5.0, ge=0, le=3600, description="a run of the same mix before, not measured")
    target_ops: int | None = Field(
        default=None,
        ge=1,
        description="fixed rate per instance (per client) in ops/s; latency also from the intended start",
    )
    consistency: Consistency | None = Field(
        default=None, description="CQL servers only: the consistency level of reads and writes (default: one)"
    )
    needs_server: ClassVar[bool] = True

    def label(self) -> str:
        return self.name

    @property
    def connections(self) -> int:
        """Each client's connections to its server: its threads."""
        return self.threads

    def refused_on(self, stack: StackSpec) -> str | None:
        return (
            speaks_refused(stack, self)
            or self._consistency_refused(stack)
            or connections_refused(stack, self)
            or (self._inserts_refused(stack))
        )

    def _consistency_refused(self, stack: StackSpec) -> str | None:
        assert stack.server is not None  # paired by spec/rules.py's pairs()
        if self.consistency is not None and stack.server.protocol != "cql":
            return f"consistency is a CQL client's setting: {stack.server.name} has none"
        return None

    def _inserts_refused(self, stack: StackSpec) -> str | None:
        count = stack.clients.count if stack.clients is not None else 1
        if count > 1 and self.mix in INSERTING_MIXES:
            return (
                f"clients: YCSB's mix {self.mix} inserts, and every client inserts the same new keys (from the record "
                "count up): one client per server, or a mix without inserts (a, b, c, f, read-heavy)"
            )
        return None

    def client_missing(self, caps: HostCaps) -> str | None:
        if "ycsb" in caps.clients:
            return None
        return "the YCSB client is not set up (java, and its jars in the cache: make setup builds them)"


class PgbenchWorkload(_Frozen, WorkloadSpec):
    """pgbench against every PostgreSQL instance of the stack, one pgbench each (or the stack's ``clients`` each,
    every one with these connections and this rate)."""

    kind: Literal["pgbench"] = "pgbench"
    name: str = Field(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_.-]+$")
    mode: Literal["tpcb-like", "select-only"] = "tpcb-like"
    clients: int = Field(default=8, ge=1, le=1000)
    runtime_s: float = Field(default=20.0, ge=1, le=86400)
    warmup_s: float = Field(default=5.0, ge=0, le=3600)
    rate: float | None = Field(default=None, gt=0, description="fixed rate (transactions/s) per instance (per client)")
    needs_server: ClassVar[bool] = True

    def label(self) -> str:
        return self.name

    @property
    def connections(self) -> int:
        """Each client's connections to its server: pgbench's clients."""
        return self.clients

    def refused_on(self, stack: StackSpec) -> str | None:
        return speaks_refused(stack, self) or connections_refused(stack, self)

    def client_missing(self, caps: HostCaps) -> str | None:
        if "pgbench" in caps.clients:
            return None
        return "pgbench is not installed (apt-get install postgresql-client; make setup does)"


IMAGE_FIELDS = ("image", "port", "client", "data_path", "env", "command")
# YCSB's mixes that insert in the run phase (workloads/ycsb.py's MIXES: insertproportion > 0). Every client's run
# inserts new keys from the record count upward, so two clients of one server would insert the same keys.
INSERTING_MIXES = frozenset({"d", "e", "write-heavy"})

# Which protocols each client speaks (a CQL client's consistency level applies to "cql" alone).
CLIENTS_OF: dict[str, frozenset[str]] = {
    "ycsb": frozenset({"postgres", "redis", "cql", "mongodb"}),
    "pgbench": frozenset({"postgres"}),
}

# Servers start with room for this many client connections (PostgreSQL's max_connections is 256).
CLIENT_LIMIT = 250


def speaks_refused(stack: StackSpec, w: YcsbWorkload | PgbenchWorkload) -> str | None:
    """Whether the client speaks the stack's server's protocol."""
    assert stack.server is not None  # paired by spec/rules.py's pairs()
    protocol = stack.server.protocol
    if protocol in CLIENTS_OF[w.kind]:
        return None
    drives = f"{w.kind} drives {' and '.join(sorted(CLIENTS_OF[w.kind]))}, not {stack.server.name}"
    return drives if stack.server.name == protocol else f"{drives} (it speaks {protocol})"


def connections_refused(stack: StackSpec, w: YcsbWorkload | PgbenchWorkload) -> str | None:
    """Each client's connections (YCSB's threads, pgbench's clients) times the stack's clients per server."""
    each = w.connections
    count = stack.clients.count if stack.clients is not None else 1
    if each * count > CLIENT_LIMIT:
        asked = f"{each} x {count} clients = {each * count}" if count > 1 else str(each)
        return f"{asked} client connections per server; layerbench starts servers for at most {CLIENT_LIMIT}"
    return None


def is_archive(image: str) -> bool:
    """An image named by a file (docker save's tar) rather than by a registry reference."""
    return image.startswith(("/", "./", "../")) or image.endswith((".tar", ".tar.gz", ".tgz"))
