"""What a trial recorded of its conditions (``TrialRecord.info``), typed, and its JSON in the store.

The run stage writes a ``TrialInfo`` (run/kinds/*.py, run/loop.py), the store keeps its ``to_json()``
(store/db.py) and the read model reads it back with ``from_json`` (store/read.py) for the analysis and the
reports. The JSON is what the trials wrote before these types existed, key for key: old databases read the
same and the schema keeps its version; a key this layerbench does not know stays in ``extra``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from layerbench.records.codec import JsonObject, decoded, dumped, split, tuple_of
from layerbench.records.facts import Facts


@dataclass(frozen=True)
class Prepared:
    """One test file a file stack prepared (its key in the precondition: ``size:mode``)."""

    seconds: float | None = None
    steady_attained: bool | None = None  # a steady-state fill: whether fio's criterion was met before its cap
    clients: int | None = None  # a stack with clients: how many files of that size were filled
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Prepared:
        known, extra = split(cls, data)
        return cls(**known, extra=extra)

    def to_json(self) -> JsonObject:
        return dumped(self)


@dataclass(frozen=True)
class Load:
    """A database stack's precondition: every instance loaded once, before its first trial."""

    started_at: float | None = None  # epoch seconds
    records: tuple[int, ...] | None = None  # YCSB: what each instance was loaded with
    pgbench_scale: int | None = None
    seconds: float | None = None
    ended_at: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Load:
        known, extra = split(cls, data)
        return cls(**decoded(known, {"records": tuple}), extra=extra)

    def to_json(self) -> JsonObject:
        return dumped(self)


Precondition = Mapping[str, Prepared] | Load


def precondition_of(data: Mapping[str, Any]) -> Precondition:
    """A file stack's files (``size:mode`` → Prepared) or a database stack's load, told apart by the load's own
    keys (a file's key always has a colon)."""
    if "seconds" in data or "started_at" in data:
        return Load.from_json(data)
    return {key: Prepared.from_json(value) for key, value in data.items()}


@dataclass(frozen=True)
class BudgetInfo:
    """What a database stack's profiles divided (spec/profiles.Budget, as the fleet recorded it)."""

    cpus: float | None = None
    memory: int | None = None
    max_instances: int | None = None
    read_bps: float | None = None  # the device's bandwidth the run took (None: not measured)
    write_bps: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BudgetInfo:
        known, extra = split(cls, data)
        return cls(**known, extra=extra)

    def to_json(self) -> JsonObject:
        return dumped(self)


@dataclass(frozen=True)
class FleetInfo:
    """A database stack's fleet (stack/fleet.Fleet's ``info``): its server's kind, the budget its profiles
    divided and, once YCSB loaded it, what each instance holds (a trial records it as the trial left it)."""

    server: str | None = None
    budget: BudgetInfo | None = None
    records: tuple[int, ...] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FleetInfo:
        known, extra = split(cls, data)
        return cls(**decoded(known, {"budget": BudgetInfo.from_json, "records": tuple}), extra=extra)

    def to_json(self) -> JsonObject:
        return dumped(self)


_PLACE = frozenset({"facts"})  # a place's facts are the engine's keys, beside its own in the same object


@dataclass(frozen=True)
class EndpointInfo:
    """One database server of a trial ("i0", ...): where the clients reached it, its limits, its engine's
    facts (stack/fleet.Endpoint's, those run/kinds/database.ENDPOINT_FACTS names)."""

    name: str | None = None
    host: str | None = None
    port: int | None = None
    memory: int | None = None
    limits: dict[str, Any] | None = None
    facts: Facts = field(default_factory=Facts)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EndpointInfo:
        known, rest = split(cls, data, _PLACE)
        return cls(**known, facts=Facts.of(rest))

    def to_json(self) -> JsonObject:
        return dumped(self, _PLACE) | self.facts.to_json()


@dataclass(frozen=True)
class ClientInfo:
    """One fio client of a trial ("c0", ...): its path and its engine's facts (run/kinds/clients.py)."""

    name: str | None = None
    path: str | None = None
    facts: Facts = field(default_factory=Facts)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ClientInfo:
        known, rest = split(cls, data, _PLACE)
        return cls(**known, facts=Facts.of(rest))

    def to_json(self) -> JsonObject:
        return dumped(self, _PLACE) | self.facts.to_json()


@dataclass(frozen=True)
class GivenOption:
    """A job file's option the workload gave as fio's command line gives one (``size: 64m`` → ``size=64m``):
    the jobs that took it, and those whose own value in the file won (workloads/jobfile.py)."""

    option: str | None = None  # fio's name of it: size, runtime, numjobs, iodepth, bs, directory, filename
    value: str | None = None
    applied: tuple[str, ...] = ()  # the jobs' section names
    overridden: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GivenOption:
        known, extra = split(cls, data)
        return cls(**decoded(known, {"applied": tuple, "overridden": tuple}), extra=extra)

    def to_json(self) -> JsonObject:
        return dumped(self)

    def said(self) -> str:
        """``size=64m: applied to [a], [b]; the file's own in [c]``."""
        parts = [f"applied to {', '.join(f'[{j}]' for j in self.applied)}"] if self.applied else []
        parts += [f"the file's own in {', '.join(f'[{j}]' for j in self.overridden)}"] if self.overridden else []
        return f"{self.option}={self.value}: {'; '.join(parts) or 'no job'}"


@dataclass(frozen=True)
class Attempt:
    """A trial's attempt measured again because the ``contended`` check flagged it (run/loop.py): when it ran,
    the check's reason, its values (metric, direction, job, value) and how long the host took to quieten."""

    started_at: float | None = None
    ended_at: float | None = None
    contended: str | None = None
    samples: tuple[tuple[str, str, str, float], ...] | None = None
    waited_s: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Attempt:
        known, extra = split(cls, data)
        return cls(**decoded(known, {"samples": tuple_of(tuple)}), extra=extra)

    def to_json(self) -> JsonObject:
        return dumped(self)


@dataclass(frozen=True)
class ClusterInfo:
    """A trial on a cluster of storage daemons layerbench built (Ceph: stack/remote/ceph/state.py): the state
    its cell asked for, the daemon stopped for it, the cluster's state as the trial began and as it ended (health,
    OSDs up and in, PGs by state, degraded objects, recovery rate), the settings in force read back from the
    daemons, and what reading back a verify workload's blocks after the cluster recovered said."""

    state: str | None = None  # healthy, degraded, recovering
    stopped: str | None = None  # the daemon stopped for the trial ("osd.2")
    start: dict[str, Any] | None = None
    end: dict[str, Any] | None = None
    settings: dict[str, Any] | None = None
    verified_after: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ClusterInfo:
        known, extra = split(cls, data)
        return cls(**known, extra=extra)

    def to_json(self) -> JsonObject:
        return dumped(self)

    def note(self) -> str:
        """``degraded: 11/33 PGs degraded, 2/3 OSDs up`` as the trial began: what a result is shown beside."""
        start = self.start or {}
        pgs, states = start.get("pgs", 0), start.get("pg_states", {})
        degraded = sum(n for s, n in states.items() if "degraded" in s.split("+"))
        recovering = sum(n for s, n in states.items() if {"recovering", "recovery_wait"} & set(s.split("+")))
        parts = [f"{degraded}/{pgs} PGs degraded"] if degraded else []
        parts += [f"{recovering}/{pgs} recovering"] if recovering else []
        parts.append(f"{start.get('osds_up', '?')}/{start.get('osds', '?')} OSDs up")
        return f"{self.state}: {', '.join(parts)}"


@dataclass(frozen=True)
class TrialInfo:
    """A trial's conditions: every key a trial kind writes, None where it did not write it.

    A file trial: ``precondition`` (its files), ``target`` (its engine's facts), ``engine``, and with fio's
    latency log ``lat_log_ms`` (and ``lat_log`` where it could not be read). A database trial: its ``load``
    as ``precondition``, ``devices`` (the device and what lies beneath), ``server`` (the fleet), ``endpoints``,
    ``latency_hdr`` (each operation's merged histogram, encoded), where its clients were timed ``clients_*``,
    and of a YCSB workload file ``overridden``. A trial of fio clients: ``clients``, ``clients_spread_ms``,
    ``clients_ran_ms``, ``runs_lost_a_log``. A job file's trial: ``job_options``. Any trial: ``disturbed`` (its
    attempts measured again), ``profiled`` (True, or what the profiler said); on a cluster
    layerbench built, ``cluster``.
    """

    precondition: Precondition | None = None
    target: Facts | None = None
    engine: str | None = None
    devices: tuple[str, ...] | None = None
    server: FleetInfo | None = None
    endpoints: tuple[EndpointInfo, ...] | None = None
    clients: tuple[ClientInfo, ...] | None = None
    latency_hdr: dict[str, str] | None = None  # operation → HdrHistogram's compact encoding
    clients_spread_ms: dict[str, float] | None = None  # start_spread_ms, finish_spread_ms
    clients_ran_ms: dict[str, tuple[float, float]] | None = None  # each client's (start, end), ms since the epoch
    clients_timed_by: str | None = None  # what told when the database clients ran
    runs_lost_a_log: tuple[str, ...] | None = None  # what fio's client said in each run that lost a log
    # A YCSB workload file's properties layerbench set otherwise: name → (the file's value or "", what ran).
    overridden: dict[str, tuple[str, str]] | None = None
    lat_log_ms: int | None = None  # the interval fio averaged its latency log over
    lat_log: str | None = None  # why the latency log was not read
    # A job file's options the workload gave (its size:, runtime_s:, ... and the placement): whom each reached.
    job_options: tuple[GivenOption, ...] | None = None
    disturbed: tuple[Attempt, ...] | None = None
    profiled: str | bool | None = None
    cluster: ClusterInfo | None = None  # a trial on a cluster layerbench built: its state (ClusterInfo)
    verified: str | None = None  # a verify workload's blocks, read back after the trial (its cluster's: there)
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TrialInfo:
        known, extra = split(cls, data)
        return cls(**decoded(known, _DECODERS), extra=extra)

    def to_json(self) -> JsonObject:
        return dumped(self)

    def __getitem__(self, key: str) -> Any:
        """The value of a key as the store keeps it (the JSON's), for a reader that names the key."""
        return self.to_json()[key]


_DECODERS = {
    "precondition": precondition_of,
    "target": Facts.of,
    "devices": tuple,
    "server": FleetInfo.from_json,
    "endpoints": tuple_of(EndpointInfo.from_json),
    "clients": tuple_of(ClientInfo.from_json),
    "clients_ran_ms": lambda ran: {job: tuple(window) for job, window in ran.items()},
    "runs_lost_a_log": tuple,
    "overridden": lambda props: {name: tuple(pair) for name, pair in props.items()},
    "disturbed": tuple_of(Attempt.from_json),
    "job_options": tuple_of(GivenOption.from_json),
    "cluster": ClusterInfo.from_json,
}
