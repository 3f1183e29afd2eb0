"""The pgbench adapter: command lines in, typed results out.

``init_argv`` and ``argv`` build argument lists; ``parse`` is a pure function
over pgbench's summary on stdout and ``latencies_from_logs`` reads its
per-transaction logs (``--log``), both tested on output captured from real
runs (tests/data/pgbench/<version>/). Percentiles come from the raw
per-transaction latencies of every client of every instance, pooled: pgbench
itself prints only an average.

What pgbench 15 does that shapes this module (each seen on the development host):

- ``--time`` is whole seconds; ``--progress`` has no "off" (0 is refused): it is left out.
- Its summary goes to stdout, everything else ("starting vacuum...end.", errors) to stderr;
  ``--initialize`` writes all of its progress to stderr.
- Without ``--rate`` the "latency average" is derived from the run time and the
  transaction count, not measured; with failures it says "(including failures)".
  "latency stddev" is printed only under ``--rate`` (or ``--progress``).
- Under ``--rate`` a transaction's latency runs from its scheduled start, so it
  includes the schedule lag (no coordinated omission); the log has the lag as an
  extra column.
- A serialization or deadlock failure is counted as failed (the log says
  "failed" where the latency would be) and the client goes on; any other error
  aborts that client, and pgbench exits with status 2.
- The log of a run is ``PREFIX.PID`` for the first thread and ``PREFIX.PID.N`` for the others.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from layerbench.errors import LayerbenchError
from layerbench.records.sample import Sample
from layerbench.spec.databases import PgbenchWorkload
from layerbench.workloads import pgbench_scripts
from layerbench.workloads.kind import WorkloadType
from layerbench.workloads.pgbench_scripts import ScriptResult, ScriptsParseError

PERCENTILES = (50.0, 95.0, 99.0, 99.9)
# What the latency column of a log line holds instead of a number when there is none to give.
_NO_LATENCY = frozenset({"failed", "serialization", "deadlock", "skipped"})


class PgbenchParseError(LayerbenchError):
    """pgbench's output (or a transaction log) was not what we can read."""


# --- command lines -------------------------------------------------------------------------------


def _connection(host: str, port: int | str, user: str) -> list[str]:
    return [f"--host={host}", f"--port={port}", f"--username={user}"]


def init_argv(
    host: str, port: int | str, scale: int, user: str, dbname: str = "postgres", pgbench: str = "pgbench"
) -> list[str]:
    """Create and fill pgbench's tables: ``scale`` x 100,000 accounts (progress every 5 s, not every 100k rows)."""
    return [pgbench, "--initialize", f"--scale={scale}", "--quiet", *_connection(host, port, user), dbname]


def argv(
    w: PgbenchWorkload,
    host: str,
    port: int | str,
    user: str,
    log_prefix: str,
    runtime_s: float,
    dbname: str = "postgres",
    cores: int | None = None,
    pgbench: str = "pgbench",
    scale: int | None = None,
    transactions: int | None = None,
) -> list[str]:
    """One run with a per-transaction log at ``log_prefix`` (its directory must exist): ``transactions`` per
    connection where given (the workload's, in its measured run), else ``runtime_s`` (its run or its warmup).

    pgbench's threads are one per client up to the cores (``os.cpu_count()`` unless given): more would
    only compete with each other and with the server. ``scale`` is the server's: the built-in scripts read
    it from the tables, a user's scripts only from the command line (pgbench's ``:scale``, else 1).
    """
    threads = min(w.clients, cores if cores is not None else os.cpu_count() or 1)
    length = f"--transactions={transactions}" if transactions is not None else f"--time={whole_seconds(runtime_s)}"
    args = [
        pgbench,
        *(script_argv(w, scale) if w.scripts else [f"--builtin={w.mode}"]),
        f"--client={w.clients}",
        f"--jobs={threads}",
        length,
        "--log",
        f"--log-prefix={log_prefix}",
        *_connection(host, port, user),
    ]
    if w.rate is not None:
        args.append(f"--rate={w.rate:g}")
    return [*args, dbname]


def script_argv(w: PgbenchWorkload, scale: int | None) -> list[str]:
    """A user's scripts with their weights and variables, and per-statement latencies (``-r``): with several
    scripts pgbench also reports each script's transactions, tps and latency (``parse``'s ``scripts``)."""
    files = [f"--file={os.path.abspath(s.path)}@{s.weight}" for s in w.scripts]
    defines = [f"--define={d}" for d in w.variables]
    return [*files, *defines, *([f"--scale={scale}"] if scale is not None else []), "--report-per-command"]


def whole_seconds(seconds: float) -> int:
    # --time takes an integer: 1.5 is refused.
    return max(1, math.ceil(seconds))


def log_files(log_prefix: str) -> list[Path]:
    """The per-transaction logs one run wrote at ``log_prefix`` (PREFIX.PID, PREFIX.PID.1, ...)."""
    prefix = Path(log_prefix)
    pattern = re.compile(re.escape(prefix.name) + r"\.\d+(\.\d+)?")
    return sorted(p for p in prefix.parent.glob(prefix.name + ".*") if pattern.fullmatch(p.name))


# --- output ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PgbenchResult:
    transaction_type: str  # "TPC-B (sort of)", "select only"
    scale: int
    clients: int
    threads: int
    duration_s: int | None  # a timed run's (--time); None for one of a number of transactions (-t)
    processed: int  # transactions that succeeded
    failed: int  # serialization and deadlock failures
    tps: float  # without the initial connection time
    latency_avg_ms: float
    latency_stddev_ms: float | None  # only under --rate (or --progress)
    latency_includes_failures: bool
    connection_time_ms: float | None
    lag_avg_ms: float | None  # --rate only: how late transactions started against their schedule
    lag_max_ms: float | None
    # A user's scripts, in the order of their --file options: each one's report (with one script, the run's);
    # none for a built-in mode.
    scripts: tuple[ScriptResult, ...] = ()


_NUMBER = r"(\d+(?:\.\d+)?)"
_FIELDS: dict[str, re.Pattern[str]] = {
    key: re.compile(pattern)
    for key, pattern in {
        "transaction_type": r"transaction type: (?:<builtin: )?(.+?)>?",
        "scale": r"scaling factor: (\d+)",
        "clients": r"number of clients: (\d+)",
        "threads": r"number of threads: (\d+)",
        "duration_s": r"duration: (\d+) s",
        "processed": r"number of transactions actually processed: (\d+)(?:/\d+)?",
        "failed": r"number of failed transactions: (\d+) \(.*\)",
        "latency_avg_ms": rf"latency average = {_NUMBER} ms(.*)",
        "latency_stddev_ms": rf"latency stddev = {_NUMBER} ms",
        "connection_time_ms": rf"initial connection time = {_NUMBER} ms",
        "lag": rf"rate limit schedule lag: avg {_NUMBER} \(max {_NUMBER}\) ms",
        "tps": rf"tps = {_NUMBER} \(without initial connection time\)",
    }.items()
}
_REQUIRED = ("transaction_type", "scale", "clients", "threads", "processed", "failed", "latency_avg_ms")


def parse(text: str) -> PgbenchResult:
    """pgbench's (15 or newer) summary of a run, as printed on stdout, with its report of each of a user's
    scripts where it gave one (pgbench_scripts.py)."""
    summary, report = pgbench_scripts.split(text)
    result = _summary(summary, text)
    blocks = pgbench_scripts.parse_blocks(report)
    if blocks:
        return replace(result, scripts=tuple(blocks))
    if report:  # one script: its statements alone, the summary is its own
        return replace(result, scripts=(_only_script(result, report),))
    return result


def _only_script(result: PgbenchResult, report: str) -> ScriptResult:
    return ScriptResult(
        number=1,
        path=result.transaction_type,
        weight=1,
        processed=result.processed,
        tps=result.tps,
        failed=result.failed,
        latency_avg_ms=result.latency_avg_ms,
        latency_stddev_ms=result.latency_stddev_ms,
        statements=pgbench_scripts.statements(report.splitlines()),
    )


def _summary(summary: str, text: str) -> PgbenchResult:
    found: dict[str, re.Match[str]] = {}
    for line in summary.splitlines():
        for key, pattern in _FIELDS.items():
            match = pattern.fullmatch(line.strip())
            if match and key not in found:
                found[key] = match
    missing = [k for k in (*_REQUIRED, "tps") if k not in found]
    if missing:
        tail = " | ".join(text.strip().splitlines()[-2:]) or "(empty)"
        raise PgbenchParseError(f"pgbench's summary lacks {', '.join(missing)}; its output ends: {tail}")
    lag = found.get("lag")
    return PgbenchResult(
        transaction_type=found["transaction_type"][1],
        scale=int(found["scale"][1]),
        clients=int(found["clients"][1]),
        threads=int(found["threads"][1]),
        duration_s=None if "duration_s" not in found else int(found["duration_s"][1]),
        processed=int(found["processed"][1]),
        failed=int(found["failed"][1]),
        tps=float(found["tps"][1]),
        latency_avg_ms=float(found["latency_avg_ms"][1]),
        latency_stddev_ms=_optional(found, "latency_stddev_ms"),
        latency_includes_failures="including failures" in found["latency_avg_ms"][2],
        connection_time_ms=_optional(found, "connection_time_ms"),
        lag_avg_ms=None if lag is None else float(lag[1]),
        lag_max_ms=None if lag is None else float(lag[2]),
    )


def _optional(found: dict[str, re.Match[str]], key: str) -> float | None:
    return float(found[key][1]) if key in found else None


@dataclass(frozen=True)
class Transactions:
    """Every successful transaction of some per-transaction logs: its latency (µs) and its script (0, 1, ...
    in the order of the --file options; 0 for a built-in mode)."""

    latency_us: np.ndarray
    script: np.ndarray

    def of_script(self, number: int) -> np.ndarray:
        return self.latency_us[self.script == number]


def latencies_from_logs(paths: Iterable[str | Path]) -> np.ndarray:
    """Latency (µs) of every successful transaction in these logs: every client, thread and instance, pooled."""
    return read_logs(paths).latency_us


def read_logs(paths: Iterable[str | Path]) -> Transactions:
    """Every successful transaction in these logs, pooled.

    A log line is ``client_id transaction_no latency script_no epoch_s epoch_us
    [schedule_lag] [retries]``; failed and skipped transactions have no latency.
    """
    return pooled([_log_transactions(Path(p)) for p in paths])


def pooled(parts: Sequence[Transactions]) -> Transactions:
    if not parts:
        return Transactions(np.empty(0), np.empty(0, dtype=np.int64))
    return Transactions(np.concatenate([t.latency_us for t in parts]), np.concatenate([t.script for t in parts]))


def _log_transactions(path: Path) -> Transactions:
    values: list[int] = []
    scripts: list[int] = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        fields = line.split()
        if len(fields) < 6:
            raise PgbenchParseError(f"{path}, line {number}: not a pgbench transaction log line: {line!r}")
        if fields[2] in _NO_LATENCY:
            continue
        try:
            values.append(int(fields[2]))
            scripts.append(int(fields[3]))
        except ValueError as exc:
            raise PgbenchParseError(f"{path}, line {number}: latency {fields[2]!r} is not a number") from exc
    return Transactions(np.array(values, dtype=np.float64), np.array(scripts, dtype=np.int64))


def by_script(log: Transactions, names: Sequence[str]) -> dict[str, np.ndarray]:
    """Each script's latencies (µs) by its name, ``names`` in the order of the workload's scripts."""
    return {name: log.of_script(n) for n, name in enumerate(names)}


def log_window(paths: Iterable[str | Path]) -> tuple[float, float]:
    """When one pgbench ran its transactions, (start, end) in ms since the epoch, from its per-transaction logs:
    a line's time (epoch_s, epoch_us) is when the transaction ended; the first start is the earliest end less
    that transaction's latency (under --rate: its scheduled start). A failed one has no latency: its end only."""
    starts, ends = [], []
    for path in paths:
        for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
            fields = line.split()
            try:
                end_ms = int(fields[4]) * 1000 + int(fields[5]) / 1000
                took_ms = 0.0 if fields[2] in _NO_LATENCY else int(fields[2]) / 1000
            except (IndexError, ValueError) as exc:
                raise PgbenchParseError(f"{path}, line {number}: not a pgbench transaction log line: {line!r}") from exc
            starts.append(end_ms - took_ms)
            ends.append(end_ms)
    if not ends:
        raise PgbenchParseError("no transaction in pgbench's logs: the client did not run")
    return min(starts), max(ends)


def samples(
    result: PgbenchResult, latencies: np.ndarray, job: str, scripts: Mapping[str, np.ndarray] | None = None
) -> list[Sample]:
    """tps as "ops", and the transactions' latency, count and failures (direction "": one kind of operation).

    Latencies come from the logs (measured per transaction); without any, only
    pgbench's own average is reported, since it is derived from tps. With a
    user's scripts (``scripts``: each one's latencies by its name, in the
    workload's order), ops, count and errors are each script's, its name their
    direction (they add up to the run's, as fio's reads and writes do), and
    latency is each script's and every transaction's (direction "").
    """
    if scripts is not None:
        return [*_script_samples(result, scripts, job), *_latency_or_average(latencies, result.latency_avg_ms, job)]
    out = [
        Sample("ops", result.tps, "ops/s", "", job),
        Sample("count", float(result.processed), "ops", "", job),
        Sample("errors", float(result.failed), "ops", "", job),
    ]
    return [*out, *_latency_or_average(latencies, result.latency_avg_ms, job)]


def _script_samples(result: PgbenchResult, scripts: Mapping[str, np.ndarray], job: str) -> list[Sample]:
    out: list[Sample] = []
    for name, r in pgbench_scripts.named(list(result.scripts), list(scripts)).items():
        out += [
            Sample("ops", r.tps, "ops/s", name, job),
            Sample("count", float(r.processed), "ops", name, job),
            Sample("errors", float(r.failed), "ops", name, job),
        ]
        out += _latency_or_average(scripts[name], r.latency_avg_ms, job, name)
    return out


def _latency_or_average(latencies: np.ndarray, average_ms: float, job: str, direction: str = "") -> list[Sample]:
    if latencies.size == 0:
        return [Sample("lat_avg_us", average_ms * 1000, "us", direction, job)]
    return latency_samples(latencies, job, direction)


def latency_samples(latencies: np.ndarray, job: str, direction: str = "") -> list[Sample]:
    """Mean, extremes and percentiles of raw latencies (µs): one client's, or every instance's pooled; of one
    script (``direction``: its name) or of every transaction."""
    if latencies.size == 0:
        return []
    values = {"lat_avg_us": latencies.mean(), "lat_min_us": latencies.min(), "lat_max_us": latencies.max()}
    for p, v in zip(PERCENTILES, np.percentile(latencies, PERCENTILES), strict=True):
        values[f"lat_p{p:g}_us"] = v
    return [Sample(metric, float(v), "us", direction, job) for metric, v in values.items()]


# The workload type: a database client, whose headline is its transactions per second over all instances; a
# user's scripts are read by pgbench before anything runs (pgbench_scripts.reads).
WORKLOAD = WorkloadType(
    kind="pgbench",
    comms=("pgbench",),
    headline=lambda w: "ops",
    parse_errors=(PgbenchParseError, ScriptsParseError),
    reads=pgbench_scripts.reads,
)
