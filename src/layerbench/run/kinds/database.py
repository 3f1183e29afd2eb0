"""Database trials: the servers are loaded once per stack, then one client per instance, all at once.

The load (YCSB's load phase, pgbench's initialization) is the stack's
precondition: every instance loaded in parallel before its first trial. A
trial is a warm-up of the same workload, whose numbers are discarded, then the
measured run: every instance's client started together, under the monitor.
Each client's report is kept, its throughput and latency stored per instance
("i0", "i1", ...), and the latency of all instances merged (YCSB's
HdrHistogram logs, pgbench's per-transaction logs) stored as job "all", its
histogram kept with the trial so a cell's percentiles merge over trials too.

YCSB exits 0 even when its binding failed; its report, not its exit code,
says how the trial went: a client that could not talk to its server fails the
trial, operations the database refused (Redis out of memory) are data and
are flagged.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from layerbench import proc
from layerbench.errors import ToolError
from layerbench.proc import Completed
from layerbench.records.checks import Check
from layerbench.records.facts import Facts
from layerbench.records.info import EndpointInfo, Load, TrialInfo
from layerbench.records.trial import MonitorPoint, TrialRecord
from layerbench.run.kinds.database_clients import (
    Client,
    Measured,
    Timing,
    clients_of,
    instance_job,
    pgbench_measured,
    timing,
    ycsb_measured,
)
from layerbench.run.kinds.single import Outcome, category, record
from layerbench.run.measure.checks import DATABASE_REMEDY, emulated
from layerbench.run.measure.monitor import Monitor, devices_beneath
from layerbench.run.measure.monitor_checks import bottleneck_check, contended_check
from layerbench.run.schedule import Trial
from layerbench.spec.clients import ClientsSpec
from layerbench.spec.databases import PgbenchWorkload, YcsbWorkload
from layerbench.spec.models import DbWorkload, StackSpec, Workload
from layerbench.stack.cgroups import verdict
from layerbench.stack.fleet import Endpoint, Fleet
from layerbench.stack.target import BuildContext
from layerbench.workloads import pgbench, registry, ycsb

CLIENT_SLACK_S = 180.0  # JVM start, connections, the report: beyond the phase's own time
LOAD_TIMEOUT_S = 3 * 3600.0
# What a trial records of each server's place, where its engine gave it (stack.target.Facts).
ENDPOINT_FACTS = ("container", "limits_enforced", "accel", "guest_kernel", "unit")
Spec = ClientsSpec | None  # the stack's clients per instance (database_clients.py); None: one each
PG_USER = "postgres"  # the server's user (workloads/servers/postgres.py), which pgbench logs in as


def prepare(fleet: Fleet, workloads: list[DbWorkload], ctx: BuildContext) -> dict[str, Any]:
    """Load every instance, in parallel, with what this stack's workloads read; say what each holds, and
    when the load ran (it may run beside another stack's build, never beside a trial: run/loop.py's preload)."""
    started = time.monotonic()
    info: dict[str, Any] = {"started_at": time.time()}
    kinds = {w.kind for w in workloads}
    with credentials(fleet, ctx):
        for kind, load in LOADS.items():  # in this order: YCSB's load, then pgbench's initialization
            if kind in kinds:
                load(fleet, [w for w in workloads if w.kind == kind], ctx, info)
        info["pgbench_scale"] = fleet.server.scale
    info["seconds"] = round(time.monotonic() - started, 3)
    info["ended_at"] = time.time()
    return info


def _ycsb_loaded(fleet: Fleet, workloads: list[DbWorkload], ctx: BuildContext, info: dict[str, Any]) -> None:
    fleet.records[:] = _ycsb_load(fleet, ycsb.loader(workloads, fleet.server.load_threads), ctx)
    info["records"] = list(fleet.records)


def _pgbench_initialized(fleet: Fleet, workloads: list[DbWorkload], ctx: BuildContext, info: dict[str, Any]) -> None:
    argvs = [pgbench.init_argv(e.host, e.port, fleet.server.scale, PG_USER) for e in fleet.endpoints]
    for done in proc.run_all(argvs, timeout=LOAD_TIMEOUT_S, env=_pg_env(fleet, ctx)):
        done.check()


def _ycsb_load(fleet: Fleet, loader: YcsbWorkload, ctx: BuildContext) -> list[int]:
    counts = [fleet.server.record_count] * len(fleet.endpoints)
    with _workload_file(loader, ctx) as file:
        argvs = [
            _ycsb_argv(fleet, ycsb.properties(loader, fleet.server, n, _endpoint(e), "load"), "load", ctx, file)
            for e, n in zip(fleet.endpoints, counts, strict=True)
        ]
        finished = proc.run_all(argvs, timeout=LOAD_TIMEOUT_S)
    for e, done in zip(fleet.endpoints, finished, strict=True):
        result = _ycsb_report(done)
        insert = result.operations.get("INSERT")
        if insert is None or insert.errors:
            raise ToolError(done.argv, done.rc, f"the load of instance {e.index} failed: {_tail(done)}")
    return counts


# Each client's load of a stack's servers (its precondition), by the workload's kind, as RUNNERS are.
LOADS: dict[str, Callable[[Fleet, list[DbWorkload], BuildContext, dict[str, Any]], None]] = {
    "ycsb": _ycsb_loaded,
    "pgbench": _pgbench_initialized,
}


def run_trial(fleet: Fleet, trial: Trial, prepared: dict[str, Any], ctx: BuildContext) -> TrialRecord:
    started = time.time()
    devices = devices_beneath(fleet.device.path)
    load = Load.from_json(prepared)  # as the run loop keeps it per stack (merged over the stack's workloads)
    out = Outcome(
        info=TrialInfo(precondition=load, engine=fleet.engine, devices=tuple(devices), endpoints=_describe(fleet))
    )
    w = trial.cell.workload
    assert w.needs_server  # the run loop sends only clients to a fleet
    try:
        with credentials(fleet, ctx):
            RUNNERS[w.kind](fleet, w, out, ctx, devices, trial.cell.stack.clients)
    except ToolError as exc:
        out.category, out.stderr = category(exc.rc, exc.stderr), exc.stderr
        out.argv = out.argv or exc.argv
    except registry.of(w).parse_errors as exc:
        out.category, out.stderr = "parse-error", str(exc)
    except OSError as exc:
        out.category, out.stderr = "setup-error", f"{type(exc).__name__}: {exc}"
    # The fleet as the trial left it: each instance's records with this trial's inserts.
    out.info = replace(out.info, server=replace(fleet.info, records=tuple(fleet.records) or None))
    return record(trial, started, out)


def _describe(fleet: Fleet) -> tuple[EndpointInfo, ...]:
    return tuple(
        EndpointInfo(
            name=f"i{e.index}",
            host=e.host,
            port=e.port,
            memory=e.memory,
            limits=e.limits.model_dump(mode="json", exclude_none=True),
            facts=Facts.of(e.facts.recorded(ENDPOINT_FACTS)),
        )
        for e in fleet.endpoints
    )


# --- YCSB --------------------------------------------------------------------------------------------


def _ycsb(fleet: Fleet, w: YcsbWorkload, out: Outcome, ctx: BuildContext, devices: list[str], spec: Spec) -> None:
    clients = clients_of(len(fleet.endpoints), spec)
    records = fleet.records
    expected: list[int | None] = [None] * len(clients)
    if w.warmup_s > 0:
        warm, _, _ = _ycsb_phase(fleet, w, "warmup", clients, [None] * len(clients), expected, ctx)
        _inserted(records, clients, warm)
        # The warm-up's pace sizes the run's operation count where it sizes a key range (ycsb.operation_count).
        expected = [max(1, int(r.throughput * w.runtime_s)) for r in warm]
    with tempfile.TemporaryDirectory(dir=ctx.work_dir, prefix="hdr-") as tmp:
        logs = [Path(tmp) / c.job for c in clients]
        for d in logs:
            d.mkdir()
        with _monitor(fleet, devices, ctx) as mon:
            results, done, props = _ycsb_phase(fleet, w, "run", clients, logs, expected, ctx)
        measured = ycsb_measured(clients, results, logs, spec is not None)
    out.argv, out.stdout, out.stderr = done[0].argv, _joined(clients, done, "stdout"), _joined(clients, done, "stderr")
    _inserted(records, clients, results)
    _kept(out, measured)
    _finish(out, mon, fleet, devices, {c.job: _refused(r) for c, r in zip(clients, results, strict=True)})
    _overrode(out, w, ycsb.overridden(w, props[0], fleet.server.protocol, "run"))
    if measured.windows:
        _timed(out, timing(measured.windows, w.runtime_s, spec, "YCSB's HdrHistogram logs: start time, intervals"))


def _overrode(out: Outcome, w: YcsbWorkload, overrides: dict[str, tuple[str, str]]) -> None:
    """A workload file's properties layerbench set otherwise (the first client's: the others differ only in
    their server and record count), kept with the trial and named in its checks."""
    if w.workload_file is None:
        return
    out.info = replace(out.info, overridden=overrides)
    named = ", ".join(f"{k}={v} (file: {f or 'unset'})" for k, (f, v) in sorted(overrides.items()))
    detail = f"{w.workload_file} ran as written but for {named}" if named else f"{w.workload_file} ran as written"
    out.checks.append(Check("workload-file", "pass", detail))


def _inserted(records: list[int], clients: list[Client], results: list[ycsb.YcsbResult]) -> None:
    """What each instance holds after a phase: every insert of every client of it took a new key."""
    for c, r in zip(clients, results, strict=True):
        records[c.instance] = ycsb.records_after(r, records[c.instance])


def _ycsb_phase(
    fleet: Fleet,
    w: YcsbWorkload,
    phase: str,
    clients: list[Client],
    logs: list[Path] | list[None],
    expected: list[int | None],
    ctx: BuildContext,
) -> tuple[list[ycsb.YcsbResult], list[Completed], list[dict[str, str]]]:
    """Every client of every instance at once: their reports, parsed, what each printed, and the properties
    each was given."""
    records = fleet.records
    argvs, given = [], []
    seconds = w.runtime_s if phase == "run" else w.warmup_s
    with _workload_file(w, ctx) as file:
        for c, log, ops in zip(clients, logs, expected, strict=True):
            e = fleet.endpoints[c.instance]
            path = str(log) if log is not None else None
            props = ycsb.properties(w, fleet.server, records[c.instance], _endpoint(e), phase, path, ops)  # type: ignore[arg-type]
            argvs.append(_ycsb_argv(fleet, props, phase, ctx, file))
            given.append(props)
        done = proc.run_all(argvs, timeout=seconds + CLIENT_SLACK_S)
    return [_ycsb_report(d) for d in done], done, given


def _refused(result: ycsb.YcsbResult) -> int:
    return sum(op.errors or 0 for op in result.operations.values())


def _ycsb_report(done: Completed) -> ycsb.YcsbResult:
    result = ycsb.parse(done.stdout)
    if done.rc != 0 or result.exceptions:
        # The binding could not do its work (no connection, a driver error): these are no measurements.
        raise ToolError(done.argv, done.rc if done.rc != 0 else 1, _tail(done, result.exceptions))
    return result


def _ycsb_argv(fleet: Fleet, props: dict[str, str], phase: str, ctx: BuildContext, file: list[str]) -> list[str]:
    java = shutil.which("java") or "java"
    secret = [str(_secret_files(ctx)[0])] if fleet.definition.authenticates else []
    files = [*file, *secret]  # the workload's file first: what follows it wins
    return ycsb.argv(java, str(ctx.cache_dir), fleet.server.protocol, phase, props, files)  # type: ignore[arg-type]


@contextmanager
def _workload_file(w: YcsbWorkload, ctx: BuildContext) -> Iterator[list[str]]:
    """A workload file where this phase's clients read it (``-P``), from the text the cell keeps; this thread's
    own copy (a load may run beside another stack's trial), removed when the phase is done. None for a mix."""
    where = ctx.work_dir / f"ycsb-{os.getpid()}-{threading.get_native_id()}"
    where.mkdir(exist_ok=True)
    try:
        yield ycsb.put_workload_file(w, where)
    finally:
        for path in where.iterdir():
            path.unlink()
        where.rmdir()


def _endpoint(e: Endpoint) -> dict[str, str]:
    return {"host": e.host, "port": str(e.port)}


# --- pgbench -----------------------------------------------------------------------------------------


def _pgbench(fleet: Fleet, w: PgbenchWorkload, out: Outcome, ctx: BuildContext, devices: list[str], spec: Spec) -> None:
    clients = clients_of(len(fleet.endpoints), spec)
    with tempfile.TemporaryDirectory(dir=ctx.work_dir, prefix="pgbench-") as tmp:
        if w.warmup_s > 0:
            _pgbench_phase(fleet, w, clients, Path(tmp) / "warmup", w.warmup_s, ctx)
        with _monitor(fleet, devices, ctx) as mon:
            done, prefixes = _pgbench_phase(fleet, w, clients, Path(tmp) / "run", w.runtime_s, ctx, w.transactions)
        out.argv, out.stdout = done[0].argv, _joined(clients, done, "stdout")
        out.stderr = _joined(clients, done, "stderr")
        results = [pgbench.parse(d.stdout) for d in done]
        logs = [pgbench.log_files(p) for p in prefixes]
        measured = pgbench_measured(clients, results, logs, spec is not None, [s.name for s in w.scripts])
    _kept(out, measured)
    _finish(out, mon, fleet, devices, {c.job: r.failed for c, r in zip(clients, results, strict=True)})
    if measured.windows:
        ran = _pgbench_ran_s(w, measured.windows)
        _timed(out, timing(measured.windows, ran, spec, "pgbench's per-transaction logs: ends, latencies"))


def _pgbench_ran_s(w: PgbenchWorkload, windows: dict[str, tuple[float, float]]) -> float:
    """The run the clients' spread is judged against: its runtime, or, for a number of transactions (whose
    runtime_s is only the longest it may take), how long the clients ran together, first start to last end."""
    if w.transactions is None:
        return w.runtime_s
    return (max(end for _, end in windows.values()) - min(start for start, _ in windows.values())) / 1000


def _pgbench_phase(
    fleet: Fleet,
    w: PgbenchWorkload,
    clients: list[Client],
    where: Path,
    seconds: float,
    ctx: BuildContext,
    transactions: int | None = None,
) -> tuple[list[Completed], list[str]]:
    """Every client at once, for ``seconds`` or (a measured run of ``transactions``) at most that long; a user's
    scripts read the server's scale as ``:scale``."""
    where.mkdir()
    prefixes = [str(where / c.job) for c in clients]
    argvs = []
    for c, p in zip(clients, prefixes, strict=True):
        e = fleet.endpoints[c.instance]
        argvs.append(pgbench.argv(w, e.host, e.port, PG_USER, p, seconds, scale=fleet.server.scale,
                                  transactions=transactions))  # fmt: skip
    done = proc.run_all(argvs, timeout=seconds + CLIENT_SLACK_S, env=_pg_env(fleet, ctx))
    for d in done:
        d.check()
    return done, prefixes


RUNNERS: dict[str, Callable[[Fleet, Any, Outcome, BuildContext, list[str], Spec], None]] = {
    "ycsb": _ycsb,
    "pgbench": _pgbench,
}


def _kept(out: Outcome, measured: Measured) -> None:
    out.samples = measured.samples
    if measured.latency_hdr:
        out.info = replace(out.info, latency_hdr=measured.latency_hdr)


def _timed(out: Outcome, t: Timing) -> None:
    out.samples += t.samples
    out.info = replace(
        out.info,
        clients_spread_ms=t.info.clients_spread_ms,
        clients_ran_ms=t.info.clients_ran_ms,
        clients_timed_by=t.info.clients_timed_by,
    )
    out.checks.append(t.check)


# --- what every database trial shares ------------------------------------------------------------------


@contextmanager
def credentials(fleet: Fleet, ctx: BuildContext) -> Iterator[None]:
    """The run's password where the clients read it, while they run: a YCSB properties file (``-P``: the
    command line, which the store keeps, names the file only) and a pgpass file (pgbench's PGPASSFILE),
    each 0600 in the run's private directory and removed afterwards. Nothing for an image's server."""
    if not fleet.definition.authenticates:
        yield
        return
    props, pgpass = _secret_files(ctx)
    texts = {
        props: f"{ycsb.prefix(fleet.server.protocol)}.password={ctx.password}\n",
        pgpass: f"*:*:*:{PG_USER}:{ctx.password}\n",  # token_urlsafe: no ':' or '\\' to escape
    }
    try:
        for path, text in texts.items():
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(text)
        yield
    finally:
        for path in texts:
            path.unlink(missing_ok=True)


def _secret_files(ctx: BuildContext) -> tuple[Path, Path]:
    """This thread's client secret files: a --parallel-nodes child has its own, and so has each stack's load
    while the next stack is built (run/loop.py's preload)."""
    me = f"client-{os.getpid()}-{threading.get_native_id()}"
    return ctx.work_dir / f"{me}.properties", ctx.work_dir / f"{me}.pgpass"


def _pg_env(fleet: Fleet, ctx: BuildContext) -> dict[str, str] | None:
    return {**os.environ, "PGPASSFILE": str(_secret_files(ctx)[1])} if fleet.definition.authenticates else None


def _monitor(fleet: Fleet, devices: list[str], ctx: BuildContext) -> Monitor:
    cgroups = {
        f"i{e.index}": {k: Path(v) for k, v in e.facts.cgroup.items()}
        for e in fleet.endpoints
        if "cgroup" in e.facts.told
    }
    return Monitor(devices, cgroups=cgroups, on_point=ctx.on_monitor)


def _finish(out: Outcome, mon: Monitor, fleet: Fleet, devices: list[str], errors: dict[str, int]) -> None:
    out.status = "ok"
    out.monitor = [MonitorPoint(p.t, p.series, p.value, p.unit) for p in mon.points]
    limits = {f"i{e.index}": e.limits.model_dump(mode="json", exclude_none=True) for e in fleet.endpoints}
    unseen = next((e.facts.unseen for e in fleet.endpoints if e.facts.unseen), None)  # another machine's
    out.checks = [bottleneck_check(mon, devices[-1] if devices else "", DATABASE_REMEDY, limits, unseen)]
    out.checks.append(contended_check(mon, unseen))
    out.checks += [_errors_check(errors), *_limit_checks(fleet)]
    out.checks += emulated(next((e.facts.accel for e in fleet.endpoints if "accel" in e.facts.told), None))
    out.checks.append(Check("device-accounting", "skip", "a database decides what reaches the device (its caches)"))


def _errors_check(errors: dict[str, int]) -> Check:
    failing = {k: v for k, v in errors.items() if v}
    if not failing:
        return Check("client-errors", "pass", "every operation succeeded")
    detail = ", ".join(f"{k}: {v}" for k, v in failing.items())
    return Check(
        "client-errors",
        "flag",
        f"operations the database refused ({detail}); the throughput counts them: see the raw output "
        "(a Redis at maxmemory refuses writes: give it more memory or load fewer records)",
    )


def _limit_checks(fleet: Fleet) -> list[Check]:
    checks = []
    for e in fleet.endpoints:
        asked = e.limits.model_dump(mode="json", exclude_none=True)
        if not asked or "limits_enforced" not in e.facts.told:
            continue
        status, detail = verdict(asked, e.facts.limits_enforced or {})
        checks.append(Check("limit-applied", status, f"i{e.index}: {detail}"))
    return checks


def _joined(clients: list[Client], done: list[Completed], stream: str) -> str:
    return "\n".join(f"--- {_who(c)} ---\n{getattr(d, stream)}" for c, d in zip(clients, done, strict=True))


def _who(c: Client) -> str:
    return f"instance {c.instance}" if c.job == instance_job(c.instance) else f"client {c.job}"


def _tail(done: Completed, exceptions: tuple[str, ...] = ()) -> str:
    lines = [*exceptions[:5], *done.stderr.strip().splitlines()[-5:]] or done.stdout.strip().splitlines()[-10:]
    return "\n".join(lines) or f"exit {done.rc}, no output"


class Database:
    """Database servers (a fleet of instances) with their clients, on this host or dealt over other nodes;
    the load is the preparation."""

    name = "database"

    def accepts(self, stack: StackSpec) -> bool:
        return stack.server is not None

    def prepare(self, placed: Fleet, workloads: list[Workload], ctx: BuildContext) -> dict[str, Any]:
        return prepare(placed, workloads, ctx)

    def run(
        self, placed: Fleet, trial: Trial, prepared: dict[str, Any], ctx: BuildContext, latency_log: bool
    ) -> TrialRecord:
        return run_trial(placed, trial, prepared, ctx)


KIND = Database()
