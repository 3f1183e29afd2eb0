"""The database side of a spec: servers as a stack layer, clients as workloads.

A stack with a ``server`` runs that many database servers (``instances``) on
its placement, natively or one per container; its workloads are clients
(YCSB, pgbench) run against every instance at once. The data set the servers
are loaded with belongs to the server, because every workload on it reads it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    Strict,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_serializer,
    model_validator,
)

from layerbench.spec import ycsb_file
from layerbench.spec.own_files import file_digest
from layerbench.spec.sizes import SIZE_SCHEMA, parse_size
from layerbench.spec.workload_spec import STORED, WorkloadSpec, existing_file

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
    workload_file: str | None = Field(
        default=None,
        description="instead of mix: a YCSB workload file (its own format, as YCSB's workloads/workloada); "
        "layerbench sets only the binding, threads, the time, a target and the measurement over it",
    )
    workload_text: str | None = Field(
        default=None,
        description="workload_file's content, read when the spec is loaded and kept with the run's cells "
        "(set by layerbench; given, it is run instead of the file's current content)",
    )
    needs_server: ClassVar[bool] = True

    @model_validator(mode="before")
    @classmethod
    def _read_workload_file(cls, value: Any, info: ValidationInfo) -> Any:
        # Read once, when the spec is loaded: the cell's config keeps the text, so a stored run says what ran
        # and an edited file makes new cells rather than changing old ones.
        if not isinstance(value, dict) or not value.get("workload_file") or value.get("workload_text") is not None:
            return value
        return {**value, "workload_text": _read(value["workload_file"])}

    @model_validator(mode="after")
    def _file_or_mix(self) -> YcsbWorkload:
        if self.workload_file is None:
            if self.workload_text is not None:
                raise ValueError("workload_text: layerbench reads it from workload_file; give workload_file")
            return self
        given = [f for f in ("mix", "distribution") if f in self.model_fields_set]
        if given:
            raise ValueError(f"{', '.join(given)}: a workload_file sets its own mix (requestdistribution too)")
        assert self.workload_text is not None  # by _read_workload_file
        ycsb_file.checked(self.file_properties, self.workload_file)
        return self

    @model_serializer(mode="wrap")
    def _file_or_mix_fields(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Workloads without a file dump as they did before files (their cells' ids, hashes, stay stable); a
        # file's leave out the mix it does not run.
        data: dict[str, Any] = handler(self)
        unused = ("workload_file", "workload_text") if self.workload_file is None else ("mix", "distribution")
        for name in unused:
            data.pop(name, None)
        return data

    @property
    def file_properties(self) -> dict[str, str]:
        """The workload file's properties as written (empty without a file)."""
        if self.workload_text is None:
            return {}
        return ycsb_file.parse(self.workload_text, self.workload_file or "workload_text")

    @property
    def inserts(self) -> bool:
        """Whether its run phase inserts new keys (from the record count up)."""
        if self.workload_file is not None:
            return ycsb_file.inserts(self.file_properties)
        return self.mix in INSERTING_MIXES

    def sized(self, stack: StackSpec) -> StackSpec:
        """A workload file's data set (recordcount, fieldcount, fieldlength) where the stack's server does not
        set its own: the server is loaded with it, and the feasibility rules size it."""
        props = self.file_properties
        if stack.server is None or not props:
            return stack
        server = stack.server
        mine = server.model_fields_set
        update: dict[str, Any] = {}
        if "recordcount" in props and not mine & {"records", "data"}:
            update["records"] = max(1, int(props["recordcount"]))
        update |= {f: int(props[f]) for f in ("fieldcount", "fieldlength") if f in props and f not in mine}
        if not update:
            return stack
        sized = ServerSpec.model_validate(server.model_dump(exclude_unset=True) | update)
        return stack.model_copy(update={"server": sized})

    def data_on(self, stack: StackSpec) -> dict[str, int]:
        """The records every instance of the stack's server is loaded with, before any index or log: a lower
        bound of what its filesystem must hold (spec/space.py), shared by the stack's YCSB workloads."""
        server = stack.server
        assert server is not None  # paired by spec/rules.py's pairs()
        each = server.record_count * server.record_bytes
        return {f"{server.label()} records x{stack.instances}": stack.instances * each}

    def label(self) -> str:
        return self.name

    def own_files(self) -> dict[str, str | None]:
        return {s.path: s.digest for s in self.scripts}

    @property
    def connections(self) -> int:
        """Each client's connections to its server: its threads."""
        return self.threads

    def refused_on(self, stack: StackSpec) -> str | None:
        return (
            speaks_refused(stack, self)
            or self._consistency_refused(stack)
            or connections_refused(stack, self)
            or self._inserts_refused(stack)
        )

    def _consistency_refused(self, stack: StackSpec) -> str | None:
        assert stack.server is not None  # paired by spec/rules.py's pairs()
        if self.consistency is not None and stack.server.protocol != "cql":
            return f"consistency is a CQL client's setting: {stack.server.name} has none"
        return None

    def _inserts_refused(self, stack: StackSpec) -> str | None:
        count = stack.clients.count if stack.clients is not None else 1
        if count > 1 and self.inserts:
            what = f"workload file {self.workload_file}" if self.workload_file else f"mix {self.mix}"
            return (
                f"clients: YCSB's {what} inserts, and every client inserts the same new keys (from the record "
                "count up): one client per server, or a mix without inserts (a, b, c, f, read-heavy; in a "
                "file, insertproportion=0)"
            )
        return None

    def client_missing(self, caps: HostCaps) -> str | None:
        if "ycsb" in caps.clients:
            return None
        return "the YCSB client is not set up (java, and its jars in the cache: make setup builds them)"


class PgbenchScript(_Frozen):
    """A user's own pgbench script (``pgbench --file=PATH@WEIGHT``): its file and its share of the transactions."""

    path: str = Field(min_length=1, description="the script file, as pgbench reads it (relative: to where you run)")
    weight: Annotated[int, Strict()] = Field(
        default=1, ge=1, le=10**6, description="its share of transactions against the other scripts' (pgbench's @W)"
    )
    digest: str | None = Field(
        default=None,
        description="a digest of the file's content, part of the cell's identity (set by layerbench when the "
        "spec is read; a value given is replaced)",
    )

    @model_validator(mode="before")
    @classmethod
    def _from_path(cls, value: Any, info: ValidationInfo) -> Any:
        value = {"path": value} if isinstance(value, str) else value
        # Read whenever the spec is (a resumed run's too), so an edited script makes other cells; a stored cell
        # keeps what it ran with (spec/own_files.py).
        if not isinstance(value, dict) or not isinstance(value.get("path"), str) or (info.context or {}).get(STORED):
            return value
        return {**value, "digest": file_digest(value["path"])}

    @model_serializer(mode="wrap")
    def _digest_when_read(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A cell stored before scripts had digests dumps as it did.
        data: dict[str, Any] = handler(self)
        if data.get("digest") is None:
            data.pop("digest", None)
        return data

    @field_validator("path")
    @classmethod
    def _readable(cls, value: str, info: ValidationInfo) -> str:
        return existing_file(value, "pgbench script", info.context)

    @property
    def name(self) -> str:
        """What its samples are named by (their direction): the file's name."""
        return Path(self.path).name


# -D NAME=VALUE: pgbench's variable names are identifiers (it also takes non-ASCII letters; layerbench does not).
VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Variables pgbench sets itself for every script: ``scale`` is the server's (its ``scale`` field).
SET_BY_LAYERBENCH = {"scale": "scale is the server's (server: {kind: postgres, scale: N}), set for every script"}


def _variables(value: Any) -> Any:
    """-D definitions as pgbench takes them (NAME=VALUE strings), from a mapping or a list; hashable, in order."""
    if isinstance(value, dict):
        value = [f"{k}={_variable_text(k, v)}" for k, v in sorted(value.items())]
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) and "=" in v for v in value):
        raise ValueError("variables: a mapping of names to values, or NAME=VALUE strings")
    for definition in value:
        name = definition.split("=", 1)[0]
        if not VARIABLE_NAME.fullmatch(name):
            raise ValueError(f"variables: {name!r} is not a name pgbench takes (letters, digits, _; not first a digit)")
        if name in SET_BY_LAYERBENCH:
            raise ValueError(f"variables: {SET_BY_LAYERBENCH[name]}")
    return tuple(value)


def _variable_text(name: str, value: Any) -> str:
    if isinstance(value, bool):  # pgbench's booleans are true/false, not Python's True
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise ValueError(f"variables.{name}: a string or a number, not {type(value).__name__}")


VARIABLES_SCHEMA = {
    "anyOf": [
        {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}},
        {"type": "array", "items": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*="}},
    ]
}


class PgbenchWorkload(_Frozen, WorkloadSpec):
    """pgbench against every PostgreSQL instance of the stack, one pgbench each (or the stack's ``clients`` each,
    every one with these connections and this rate): a built-in ``mode`` or the user's own ``scripts``."""

    kind: Literal["pgbench"] = "pgbench"
    name: str = Field(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_.-]+$")
    mode: Literal["tpcb-like", "select-only"] = Field(default="tpcb-like", description="a built-in script")
    scripts: tuple[PgbenchScript, ...] = Field(
        default=(),
        description="instead of mode: your own scripts (pgbench -f PATH@WEIGHT), each a path or {path, weight}; "
        "`script: PATH` is one of weight 1",
    )
    variables: Annotated[tuple[str, ...], BeforeValidator(_variables), WithJsonSchema(VARIABLES_SCHEMA)] = Field(
        default=(),
        description="scripts: variables they read (pgbench -D NAME=VALUE): a mapping of names to values, or "
        "NAME=VALUE strings",
    )
    clients: int = Field(default=8, ge=1, le=1000)
    runtime_s: float = Field(default=20.0, ge=1, le=86400)
    warmup_s: float = Field(default=5.0, ge=0, le=3600)
    transactions: int | None = Field(
        default=None,
        ge=1,
        le=10**9,
        description="instead of a run of runtime_s: this many transactions per connection (pgbench -t), "
        "runtime_s then the longest it may take",
    )
    rate: float | None = Field(default=None, gt=0, description="fixed rate (transactions/s) per instance (per client)")
    needs_server: ClassVar[bool] = True

    @model_validator(mode="before")
    @classmethod
    def _one_script(cls, value: Any) -> Any:
        # `script: PATH` is the one-script case of `scripts`, so the rest of the code sees one shape only.
        if not isinstance(value, dict) or "script" not in value:
            return value
        if "scripts" in value:
            raise ValueError("give script (one file) or scripts (several), not both")
        rest = {k: v for k, v in value.items() if k != "script"}
        return {**rest, "scripts": [value["script"]]}

    @model_validator(mode="after")
    def _scripts_or_mode(self) -> PgbenchWorkload:
        if self.scripts and "mode" in self.model_fields_set:
            raise ValueError("give mode (a built-in script) or scripts (your own), not both")
        if self.variables and not self.scripts:
            raise ValueError("variables: for your own scripts (script or scripts); the built-in modes read none")
        names = [s.name for s in self.scripts]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"scripts: two named {twice[0]}; their results are told apart by the file's name")
        return self

    @model_serializer(mode="wrap")
    def _built_in_as_before(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A built-in mode dumps as it did before scripts existed (cell ids, hashes of the dump, stay stable);
        # a scripted one without its mode, so that it reads back as it was given.
        data: dict[str, Any] = handler(self)
        for name in ("scripts", "variables", "transactions"):
            if data.get(name) in ((), [], None):
                data.pop(name, None)
        if self.scripts:
            data.pop("mode", None)
        return data

    def label(self) -> str:
        return self.name

    def own_files(self) -> dict[str, str | None]:
        return {s.path: s.digest for s in self.scripts}

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


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise ValueError(f"workload_file: cannot read {path!r}: {getattr(err, 'strerror', None) or err}") from err


def is_archive(image: str) -> bool:
    """An image named by a file (docker save's tar) rather than by a registry reference."""
    return image.startswith(("/", "./", "../")) or image.endswith((".tar", ".tar.gz", ".tgz"))
