"""A trial of many fio clients at once (spec/clients.py): one result, one row per client.

Every client's test file is prepared once per stack. A trial
starts a fio server in every target (stack/clients.py), runs one fio client on
the host that sends each its job and starts them together, then stops the
servers. Its samples: each client's as job "c0", "c1", ... (so a trial's IOPS
and bandwidth summed over jobs are the clients' total), the percentiles of
every client's completion histogram merged (job "all"), and the spread of the
clients' starts and finishes, which the ``clients-in-step`` check judges.

A user's job file runs on every client as it would alone at the client's placement, the workload's given
fields applied alike (workloads/fio_clients.py, ``job_file_text``): its samples are each client's each job
("c0/SECTION"), its ops/s the clients' summed, its latency every job's histograms merged ("all").
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from layerbench.proc import Completed
from layerbench.records.checks import Check
from layerbench.records.facts import Facts
from layerbench.records.info import ClientInfo, GivenOption, Prepared, TrialInfo
from layerbench.records.percentiles import merge, percentiles
from layerbench.records.sample import Sample
from layerbench.records.trial import MonitorPoint, TrialRecord
from layerbench.run.kinds.single import (
    TRIAL_SLACK_S,
    Outcome,
    _accounting,
    attempt,
    category,
    needs_precondition,
    record,
    watched,
)
from layerbench.run.measure.checks import FIO_REMEDY
from layerbench.run.measure.monitor import Monitor, devices_beneath
from layerbench.run.measure.monitor_checks import bottleneck_check, contended_check
from layerbench.run.schedule import Trial
from layerbench.spec.models import FioWorkload, StackSpec, Workload
from layerbench.stack.clients import ClientSet, serving
from layerbench.stack.target import BuildContext, Target
from layerbench.workloads import fio, fio_clients, fio_kind, jobfile

PRECONDITION_SLACK_S = 600.0
# fio's client now and then fails to unpack a server's log sent over the socket (seen once, on three swarm
# services in the k8s tier; fio issue 274 tells of the same on its network transport): the run's results stand
# but that client's window is lost, so the clients run again, at most this many times in all.
LOG_LOST = "failed converting IO log"
RUNS_IF_LOG_LOST = 3


def prepare(clients: ClientSet, workloads: list[FioWorkload]) -> dict[str, Prepared]:
    """Each client's file for each (size, mode) the stack's workloads read, one client after another (a native
    command is recorded in the ledger, whose connection is this thread's; a fill is seconds at most)."""
    done: dict[str, Prepared] = {}
    firsts = {(int(w.size), w.precondition): w for w in reversed(workloads) if needs_precondition(w)}
    for (size, mode), w in sorted(firsts.items()):
        t0 = time.monotonic()
        timeout = size / 2**20 + PRECONDITION_SLACK_S
        for i, t in enumerate(clients.targets):
            for argv in _steps(w, t, i, clients.spec.shared):
                t.run(argv, timeout).check()
        done[f"{size}:{mode}"] = Prepared(seconds=round(time.monotonic() - t0, 3), clients=len(clients.targets))
    return done


def _steps(w: FioWorkload, target: Target, index: int, shared: bool) -> list[list[str]]:
    size, name = int(w.size), fio_clients.data_file(target.path, w, index, shared)
    if w.precondition == "sparse":
        return [fio_clients.retarget(fio.sparse_argv(size, target.path), name)]
    steps = [fio_clients.retarget(fio.precondition_argv(size, target.path, False), name)]
    if w.precondition == "steady":
        steps.append(fio_clients.retarget(fio.steady_argv(size, target.path, False, window_s=w.ss_dur_s), name))
    return steps


def run_trial(clients: ClientSet, trial: Trial, prepared: dict[str, Prepared], ctx: BuildContext) -> TrialRecord:
    started = time.time()
    w = trial.cell.workload
    assert w.kind == "fio"  # its model refuses other workloads on a stack with clients (IozoneWorkload.refused_on)
    info = TrialInfo(precondition=prepared, engine=clients.engine, clients=_describe(clients))
    out = Outcome(info=replace(info, job_options=given(w, clients)))
    attempt(out, lambda: _execute(clients, w, out, ctx))
    return record(trial, started, out)


def given(w: FioWorkload, clients: ClientSet) -> tuple[GivenOption, ...] | None:
    """A job file's options the workload gave every client's jobs, the placement among them: one directory if
    the clients share it, else each client's own (its path in the trial's ``clients``)."""
    if not w.job_file:
        return None
    paths = sorted({t.path for t in clients.targets})
    return jobfile.options(jobfile.of_workload(w), paths[0] if len(paths) == 1 else "each client's own", False)


def _describe(clients: ClientSet) -> tuple[ClientInfo, ...]:
    keys = (
        "container",
        "pod",
        "service",
        "node",
        "daemon_url",
        "pid",
        "limits_enforced",
        "placement",
        "shared",
        "claim",
        "data_mount",
    )
    return tuple(
        ClientInfo(name=fio_clients.client_name(i), path=t.path, facts=Facts.of(t.facts.recorded(keys)))
        for i, t in enumerate(clients.targets)
    )


def _execute(clients: ClientSet, w: FioWorkload, out: Outcome, ctx: BuildContext) -> None:
    devices = devices_beneath(watched(clients.first.device))
    lost = []
    for _ in range(RUNS_IF_LOG_LOST):
        run = _run_clients(clients, w, out, devices, ctx)
        if LOG_LOST not in run.done.stderr:
            break
        lost.append(run.done.stderr.strip()[-2000:])
    if lost:  # what each run that lost a log said; the trial's result is its last run's
        out.info = replace(out.info, runs_lost_a_log=tuple(lost))
    done, mon, logs = run.done, run.monitor, run.logs
    out.stdout, out.stderr = done.stdout, done.stderr
    out.monitor = [MonitorPoint(p.t, p.series, p.value, p.unit) for p in mon.points]
    if done.rc != 0:
        out.category = category(done.rc, done.stderr)
        return
    phases = _phases(w, clients)
    try:
        result = fio_clients.parse(done.stdout, run.names)
        ends = {i: fio_clients.log_end(texts) for i, texts in logs.items()}
        times = fio_clients.client_times(result, ends, phases)
    except fio.FioParseError as exc:
        out.category, out.stderr = "parse-error", f"{exc}\n{done.stderr}"
        return
    measured = fio_clients.samples(result, times, phases, per_job=bool(w.job_file))
    out.status, out.samples = "ok", [*measured, *merged_latency(result)]
    out.logs[fio.BINS_LOG] = fio.bins_text(fio.completion_bins(result.result()))
    ran = {fio_clients.client_name(i): t for i, t in times.items()}
    out.info = replace(out.info, clients_spread_ms=fio_clients.spreads(times), clients_ran_ms=ran)
    lowest = devices[-1] if devices else ""
    # A job file's jobs run as long as they take: the clients' overlap is judged against the time they ran.
    runtime_s = max(end - start for start, end in times.values()) / 1000 if w.job_file else w.runtime_s
    out.checks = [
        _device_accounting(w, result, mon, clients, devices),
        bottleneck_check(mon, lowest, FIO_REMEDY, _limits(clients), None),
        contended_check(mon, None),
        in_step(_named(times), runtime_s, clients.spec.max_spread),
        *_machines(clients),
    ]


def _phases(w: FioWorkload, clients: ClientSet) -> dict[int, int] | None:
    """A job file's groups and the phase each runs in (which ran in turn), as for one fio; None otherwise."""
    if not w.job_file:
        return None
    return fio.group_phases(jobfile.rewrite(jobfile.of_workload(w), clients.first.path, False))


def _device_accounting(
    w: FioWorkload, result: fio_clients.ClientsResult, mon: Monitor, clients: ClientSet, devices: list[str]
) -> Check:
    fake = jobfile.without_device_io(jobfile.of_workload(w)) if w.job_file else []
    if fake:
        return Check("device-accounting", "skip", f"ioengine={', '.join(fake)} moves no data through the device")
    return _accounting(result.result(), mon, clients.first, devices)


@dataclass(frozen=True)
class ClientsRun:
    """One run of every client together: fio's client's completion, the monitor, each client's IOPS logs and
    the names fio's client knew each server by."""

    done: Completed
    monitor: Monitor
    logs: dict[int, list[str]]
    names: list[str]


def _run_clients(clients: ClientSet, w: FioWorkload, out: Outcome, devices: list[str], ctx: BuildContext) -> ClientsRun:
    with serving(clients, ctx) as where:  # the client's directory: its job files and logs go with it
        files = []
        for i, t in enumerate(clients.targets):
            path = where.cwd / f"lb-{w.name}-c{i}.fio"
            path.write_text(_job_text(w, t, i, clients.spec.shared))
            files.append(str(path))
        out.argv = fio_clients.client_argv(where.names, files)
        in_dir = ["sh", "-c", 'cd "$1" && shift && exec "$@"', "sh", str(where.cwd)]  # fio writes its logs there
        cgroups = {  # every client container's cgroup: their fio is the cell's, not other processes'
            fio_clients.client_name(i): {k: Path(v) for k, v in t.facts.cgroup.items()}
            for i, t in enumerate(clients.targets)
            if t.facts.cgroup
        }
        ramp = fio_kind.WORKLOAD.ramp_s(w)  # a job file's ramp is its own
        with Monitor(devices, cgroups=cgroups, count_from=ramp, on_point=ctx.on_monitor) as mon:
            done = ctx.runner([*in_dir, *out.argv], timeout=fio_kind.time_limit_s(w, TRIAL_SLACK_S))
        jobs = fio_clients.job_count(w)
        logs = {i: _logs(where.cwd, i, jobs) for i in range(len(clients.targets))}
    return ClientsRun(done, mon, logs, where.names)


def _job_text(w: FioWorkload, target: Target, index: int, shared: bool) -> str:
    """What client ``index`` runs: the user's job file at its placement, or the workload's fields as one."""
    if w.job_file:
        return fio_clients.job_file_text(w, target.path, index, shared)
    return fio_clients.job_text(w, fio_clients.data_file(target.path, w, index, shared))


def merged_latency(result: fio_clients.ClientsResult) -> list[Sample]:
    """The completion-latency percentiles of every client's operations (their histograms merged, never their
    percentiles averaged), job "all"; the p99 also as ``lat_p99_us``, what the scaling curve reads."""
    out = []
    for direction, hists in fio_clients.histograms(result).items():
        for name, ns in percentiles(merge(hists)).items():
            out.append(Sample(f"clat_{name}", ns, "ns", direction, fio_clients.MERGED))
            if name == "p99":
                out.append(Sample("lat_p99_us", ns / 1000, "us", direction, fio_clients.MERGED))
    return out


def _named(times: dict[int, tuple[float, float]]) -> dict[str, tuple[float, float]]:
    return {fio_clients.client_name(i): t for i, t in sorted(times.items())}


def _limits(clients: ClientSet) -> dict[str, Any]:
    """Each client's limits as asked (a container's own: the stack's), by the name its cgroup's series has."""
    return {fio_clients.client_name(i): t.facts.limits or {} for i, t in enumerate(clients.targets)}


def _logs(cwd: Path, index: int, numjobs: int) -> list[str]:
    """A client's IOPS logs as fio's client wrote them (a missing one is an empty list: a parse error)."""
    found = [cwd / name for name in fio_clients.log_files(index, numjobs)]
    return [p.read_text() for p in found if p.is_file()]


def _machines(clients: ClientSet) -> list[Check]:
    """Clients dealt over several nodes, which are all this machine's (the rules allow no other: the fio client
    reaches each server through /proc here): their total is one machine's, not that of as many machines."""
    nodes = clients.spec.nodes  # the rules deal clients over nodes only where an engine names them
    if not nodes:
        return []
    return [
        Check(
            "shared-machine",
            "flag",
            f"nodes {', '.join(nodes)} are all this machine: their {len(clients.targets)} clients shared its CPUs, "
            f"memory and disk, so their total is what one machine gives them, not {len(nodes)} machines",
        )
    ]


def in_step(times: Mapping[str, tuple[float, float]], runtime_s: float, share: float) -> Check:
    """Did the clients run together? ``times``: each client's (start, end) in ms by its name. Flagged where the
    first and the last to start (or to finish) are more than ``share`` of the runtime apart: their load then
    overlapped for less than the runtime."""
    spread = fio_clients.spreads(times)
    limit_ms = share * runtime_s * 1000
    start, finish = spread["start_spread_ms"], spread["finish_spread_ms"]
    said = f"start spread {start:.0f} ms, finish spread {finish:.0f} ms of a {runtime_s:g} s runtime"
    earliest = min(t[0] for t in times.values())
    late = [name for name, t in times.items() if t[0] - earliest > limit_ms]
    if max(start, finish) > limit_ms:
        who = f" (late: {', '.join(late)})" if late else ""
        return Check("clients-in-step", "flag", f"{said}: more than {share:.0%} of it{who}")
    return Check("clients-in-step", "pass", f"{said}, within {share:.0%} of it")


class Clients:
    """fio at several placements at once (a stack's ``clients``), started together, one combined result."""

    name = "clients"

    def accepts(self, stack: StackSpec) -> bool:
        return stack.clients is not None and stack.server is None

    def prepare(self, placed: ClientSet, workloads: list[Workload], ctx: BuildContext) -> dict[str, Any]:
        return prepare(placed, workloads)

    def run(
        self, placed: ClientSet, trial: Trial, prepared: dict[str, Any], ctx: BuildContext, latency_log: bool
    ) -> TrialRecord:
        return run_trial(placed, trial, prepared, ctx)


KIND = Clients()
