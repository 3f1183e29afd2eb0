"""Many clients per database instance (a server stack's ``clients``): who they are, when they ran, what merges.

Without ``clients`` a database trial runs one client per instance, its samples as job "i0", "i1", ...
With ``clients: N`` it runs N against each instance, all started together: client j of instance k is job
"i<k>c<j>" (its own report: ops/s, latency, errors); the instance, job "i<k>", has its clients' latency merged
(their histograms or raw latencies, never their percentiles averaged) and no ops/s of its own, since a trial's
throughput is the sum over its jobs and each operation must count once; job "all" has every client's latency
merged. When each client ran comes from the tool's own record, not from the host's clock around the process
(a JVM takes a second or more to start): YCSB's HdrHistogram logs (each log's start time and intervals),
pgbench's per-transaction logs (each transaction's end and latency). The spread between the first and the last
client to start and to finish is stored (job "all") and judged by the ``clients-in-step`` check.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from layerbench.records import hdr
from layerbench.records.checks import Check
from layerbench.records.info import TrialInfo
from layerbench.records.sample import Sample
from layerbench.run.kinds.clients import in_step
from layerbench.spec.clients import ClientsSpec
from layerbench.workloads import fio_clients, pgbench, ycsb

MERGED = "all"
DEFAULT_SPEC = ClientsSpec(count=1)  # its max_spread judges several instances' clients without a ``clients``


@dataclass(frozen=True)
class Client:
    """One client process of a trial: against which instance, its place among that instance's clients, its job."""

    instance: int
    index: int
    job: str


def clients_of(instances: int, spec: ClientsSpec | None) -> list[Client]:
    """Every client of a trial, instance by instance: one each without ``clients`` (job "i0"), else N ("i0c0")."""
    if spec is None:
        return [Client(i, 0, instance_job(i)) for i in range(instances)]
    return [Client(i, j, f"{instance_job(i)}c{j}") for i in range(instances) for j in range(spec.count)]


def instance_job(instance: int) -> str:
    return f"i{instance}"


def by_instance(clients: Sequence[Client]) -> dict[int, list[int]]:
    """Each instance's clients, as positions in ``clients``."""
    out: dict[int, list[int]] = {}
    for n, c in enumerate(clients):
        out.setdefault(c.instance, []).append(n)
    return out


@dataclass(frozen=True)
class Timing:
    """When the clients ran, as a trial stores it: spread samples, what goes in the trial's info, the check."""

    samples: list[Sample]
    info: TrialInfo  # its clients_* keys alone
    check: Check


def timing(
    windows: Mapping[str, tuple[float, float]], runtime_s: float, spec: ClientsSpec | None, source: str
) -> Timing:
    """``windows``: each client's (start, end) in ms since the epoch, by job; ``source`` says what told them.
    Without ``clients`` (one client per instance), the instances' clients are judged at the default spread."""
    spread = fio_clients.spreads(windows)
    samples = [Sample(metric, value, "ms", "", MERGED) for metric, value in spread.items()]
    info = TrialInfo(clients_spread_ms=spread, clients_ran_ms=dict(windows), clients_timed_by=source)
    share = (spec or DEFAULT_SPEC).max_spread
    return Timing(samples, info, in_step(windows, runtime_s, share))


@dataclass(frozen=True)
class Measured:
    """What a trial keeps of its clients' reports and logs: samples (each client's, each instance's where an
    instance has several, and every client's merged as "all"), the merged histograms (encoded, by operation),
    and each client's window (only where the stack has ``clients``)."""

    samples: list[Sample]
    latency_hdr: dict[str, str]
    windows: dict[str, tuple[float, float]] = field(default_factory=dict)


def ycsb_measured(
    clients: Sequence[Client], results: Sequence[ycsb.YcsbResult], logs: Sequence[Path], many: bool
) -> Measured:
    """YCSB's reports and each client's HdrHistogram log directory (``logs``, in the order of ``clients``)."""
    samples = [s for c, r in zip(clients, results, strict=True) for s in ycsb.samples(r, c.job)]
    if many:
        for instance, members in by_instance(clients).items():
            own = ycsb.merge_hdr_logs([logs[n] for n in members])
            samples += ycsb.merged_samples(own, instance_job(instance))
    merged = ycsb.merge_hdr_logs(logs)
    samples += ycsb.merged_samples(merged, MERGED)
    kept = {name.lower(): hdr.encode(m.histogram) for name, m in merged.items() if not name.upper().endswith("CLEANUP")}
    windows = _windows(clients, logs, ycsb.hdr_window, ycsb.YcsbParseError, many)
    return Measured(samples, kept, windows)


def _windows(
    clients: Sequence[Client], records: Sequence[Any], window: Any, unreadable: type[Exception], many: bool
) -> dict[str, tuple[float, float]]:
    """Each client's (start, end), from its tool's record: with ``clients`` (even one), or one client each of
    several instances, whose throughputs are summed as if their loads overlapped. Several instances' clients
    without ``clients`` are timed where their records allow (a client that logged no interval gives none: the
    trial stands without the clients-in-step check); ``clients`` requires it."""
    if not many and len(clients) < 2:
        return {}
    try:
        return {c.job: window(r) for c, r in zip(clients, records, strict=True)}
    except unreadable:
        if many:
            raise
        return {}


def pgbench_measured(
    clients: Sequence[Client],
    results: Sequence[pgbench.PgbenchResult],
    files: Sequence[list[Path]],
    many: bool,
    scripts: Sequence[str] = (),
) -> Measured:
    """pgbench's summaries and each client's per-transaction logs (``files``, in the order of ``clients``);
    with a user's ``scripts`` (their names, in the workload's order) each script's numbers too, its latency
    merged over every client as "all" and its histogram kept by its name beside every transaction's ("")."""
    own = [pgbench.read_logs(f) for f in files]
    samples = [s for c, r, log in zip(clients, results, own, strict=True) for s in _client(c, r, log, scripts)]
    if many:
        for instance, members in by_instance(clients).items():
            samples += _latencies(pgbench.pooled([own[n] for n in members]), instance_job(instance), scripts)
    pooled = pgbench.pooled(own)
    samples += _latencies(pooled, MERGED, scripts)
    kept = {"": pooled.latency_us, **(pgbench.by_script(pooled, scripts) if scripts else {})}
    latency_hdr = {op: hdr.encode(hdr.of_values(values)) for op, values in kept.items() if values.size}
    windows = _windows(clients, files, pgbench.log_window, pgbench.PgbenchParseError, many)
    return Measured(samples, latency_hdr, windows)


def _client(c: Client, r: pgbench.PgbenchResult, log: pgbench.Transactions, scripts: Sequence[str]) -> list[Sample]:
    named = pgbench.by_script(log, scripts) if scripts else None
    return pgbench.samples(r, log.latency_us, c.job, named)


def _latencies(log: pgbench.Transactions, job: str, scripts: Sequence[str]) -> list[Sample]:
    """Merged latency: every transaction's (direction ""), and each script's by its name."""
    out = pgbench.latency_samples(log.latency_us, job)
    for name, values in (pgbench.by_script(log, scripts) if scripts else {}).items():
        out += pgbench.latency_samples(values, job, name)
    return out
