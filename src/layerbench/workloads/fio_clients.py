"""fio's client/server mode: N servers, one client driving them all, one JSON document back.

Each target runs ``fio --server=sock:PATH`` (a Unix socket: nothing listens on
any network address); the host runs ``fio --client=sock:PATH1 job1.fio
--client=sock:PATH2 job2.fio ...``, which sends each server its job, starts
them together and prints one JSON document: ``client_stats``, one job object per
client (with ``group_reporting``, each with its ``hostname``: the socket's path),
and, with more than one client, fio's own sum of them named "All clients".

A user's job file runs on every client as it runs alone (``job_file_text``: the same rewrite, pointed at the
client's placement): fio's client then reports each job of each client (no group_reporting: the file's
structure is the point), clones and groups apart, every one with its client's ``hostname``. Their samples are
named ``c0/SECTION``; a workload of fields has one job per client, named ``c0``.

``parse`` is pure and tested on output captured from real runs
(tests/data/fio/<version>/clients-*.json).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from layerbench.records.sample import Sample
from layerbench.spec.models import FioWorkload
from layerbench.workloads import fio, fio_kind, jobfile

AGGREGATE = fio.CLIENTS_AGGREGATE  # fio's name for its sum of the clients
MERGED = "all"  # the job of the samples merged over clients (as database trials name theirs)
# fio's own options that belong to the client process, not to a job: they stay on its command line.
_LOCAL = ("--output-format=", "--name=")


@dataclass(frozen=True)
class ClientResult:
    index: int
    host: str  # fio's "hostname": the server's socket path here
    jobs: tuple[fio.FioJob, ...]  # a workload of fields: one (group_reporting); a job file: each job and clone

    @property
    def job(self) -> fio.FioJob:
        """A workload of fields' one job."""
        return self.jobs[0]


@dataclass(frozen=True)
class ClientsResult:
    version: str
    clients: list[ClientResult]
    aggregate: fio.FioJob | None  # fio's "All clients" (absent with one client)

    def result(self) -> fio.FioResult:
        """Every client's jobs, as one fio result (what device accounting and histograms read)."""
        return fio.FioResult(self.version, [j for c in self.clients for j in c.jobs])


def client_name(index: int) -> str:
    return f"c{index}"


def socket_name(index: int) -> str:
    """The name the client connects to (a link to the server's socket in its directory): fio's "hostname" of
    that client in the JSON."""
    return f"{client_name(index)}.sock"


def server_argv(socket: str, binary: str = "fio") -> list[str]:
    """A fio server on a Unix socket only."""
    return [binary, f"--server=sock:{socket}"]


def client_argv(connects: list[str], job_files: list[str], binary: str = "fio") -> list[str]:
    """One client process driving every server, each with its own job file (read here, sent to it)."""
    argv = [binary, "--output-format=json+"]
    for where, job in zip(connects, job_files, strict=True):
        argv += [f"--client=sock:{where}", job]
    return argv


def data_file(path: str, w: FioWorkload, index: int, shared: bool) -> str:
    """A client's test file: the workload's usual file in its own directory; in a shared one, one per client."""
    own = fio.data_file(path, int(w.size), w.precondition)
    return own.removesuffix(".dat") + f"-{client_name(index)}.dat" if shared else own


def retarget(argv: list[str], filename: str) -> list[str]:
    """A command line of fio.py's (a workload, a precondition, a sparse file) pointed at ``filename``."""
    if argv and argv[0] == "truncate":
        return [*argv[:-1], filename]
    return [f"--filename={filename}" if a.startswith("--filename=") else a for a in argv]


def job_text(w: FioWorkload, filename: str) -> str:
    """The workload as a job file (fio's client sends job files, not command-line options): the same options
    ``fio.argv`` gives one fio, one per line, and an IOPS log in epoch time, which says when the client ran."""
    args = retarget(fio.argv(w, filename, True), filename)[1:]
    lines = [f"[{w.name}]"]
    for a in args:
        if a.startswith(_LOCAL):
            continue
        key, _, value = a.removeprefix("--").partition("=")
        lines.append(f"{key}={value}")
    lines += [f"write_iops_log={LOG_PREFIX}", f"log_avg_msec={log_interval_ms(w)}", "log_unix_epoch=1"]
    return "\n".join(lines) + "\n"


def job_file_text(w: FioWorkload, path: str, index: int, shared: bool) -> str:
    """The workload's job file as client ``index`` runs it at ``path``: as fio alone runs it there (includes,
    variables and the workload's given fields resolved, the placement its directory), with an IOPS log in epoch
    time for every job, which says when the client ran. Clients sharing one directory get their own file names
    (fio's default, ``$jobname.$jobnum.$filenum``, after the client's name): a file a job names itself stays
    one file, which every client then shares."""
    text = jobfile.rewrite(fio_kind.running(w), path, False, w.allow_outside_placement)
    head, _, rest = text.partition("\n")
    assert head == "[global]", head  # jobfile.rewrite starts with the placement's [global]
    logs = [f"write_iops_log={LOG_PREFIX}", f"log_avg_msec={log_interval_ms(w)}", "log_unix_epoch=1"]
    own = [f"filename_format={client_name(index)}.$jobname.$jobnum.$filenum"] if shared else []
    return "\n".join([head, *logs, *own, rest])


def job_count(w: FioWorkload) -> int:
    """How many jobs fio runs for the workload on one client (a job file's clones counted): its IOPS logs."""
    if not w.job_file:
        return w.numjobs
    return sum(jobfile.clones(j) for j in jobfile.of_workload(w).jobs)


def parse(text: str, connects: list[str]) -> ClientsResult:
    """fio's client JSON; ``connects``: the socket of each client in the order given to fio, which names
    the clients by index (fio reports them in the order they finished)."""
    data = fio.json_object(text)
    try:
        stats = list(data["client_stats"])
        version = str(data["fio version"])
    except (KeyError, TypeError) as exc:
        raise fio.FioParseError(f"fio client JSON lacks an expected field: {exc!r}") from exc
    index_of = {c: i for i, c in enumerate(connects)}
    jobs: dict[int, list[fio.FioJob]] = {}
    aggregate = None
    for s in stats:
        try:
            job = fio.job(s)
            host = str(s.get("hostname", ""))
        except (KeyError, TypeError, ValueError) as exc:
            raise fio.FioParseError(f"fio client JSON: a client's job lacks a field: {exc!r}") from exc
        if job.name == AGGREGATE:
            aggregate = job
            continue
        if host not in index_of:
            raise fio.FioParseError(f"fio client JSON names a client it was not given: {host!r}")
        jobs.setdefault(index_of[host], []).append(job)
    missing = sorted(set(range(len(connects))) - set(jobs))
    if missing:
        raise fio.FioParseError(f"fio client JSON has no result for client(s) {', '.join(map(str, missing))}")
    clients = [ClientResult(i, connects[i], tuple(jobs[i])) for i in sorted(jobs)]
    return ClientsResult(version, clients, aggregate)


def samples(
    result: ClientsResult,
    times: dict[int, tuple[float, float]] | None = None,
    phases: dict[int, int] | None = None,
    per_job: bool = False,
) -> list[Sample]:
    """Per client (job "c0", "c1", ...; a job file's each job "c0/SECTION"): fio's samples of its jobs, so a
    trial's IOPS and bandwidth summed over jobs are the clients' total; for the trial (job "all"): the clients'
    ops/s summed (a job file's each over its groups in turn: ``phases``, fio.group_phases) and their start and
    finish spread (run/kinds/clients.py adds the latency of their histograms merged)."""
    ops = sum(_ops(result.version, c.jobs, phases) for c in result.clients)
    out: list[Sample] = [Sample("ops", ops, "ops/s", "", MERGED)]
    for c in result.clients:
        named = [
            fio.FioJob(_named(c.index, j.name, per_job), j.groupid, j.error, j.directions, j.runtime_ms) for j in c.jobs
        ]
        out += [s for s in fio.samples(fio.FioResult(result.version, named)) if s.metric != "ops"]
    if times:
        out += [Sample(key, value, "ms", "", MERGED) for key, value in spreads(times).items()]
    return out


def _named(index: int, job: str, per_job: bool) -> str:
    return f"{client_name(index)}/{job}" if per_job else client_name(index)


def histograms(result: ClientsResult) -> dict[str, list[dict[int, int]]]:
    """Per direction, every client's completion-latency histogram (json+ bins), to merge."""
    out: dict[str, list[dict[int, int]]] = {}
    for c in result.clients:
        for job in c.jobs:
            for direction, d in job.directions.items():
                out.setdefault(direction, []).append(d.clat_bins)
    return out


def spreads(times: Mapping[Any, tuple[float, float]]) -> dict[str, float]:
    """Between the first and the last client to start (``start_spread_ms``), and to finish
    (``finish_spread_ms``), from each client's (start, finish) in ms (``client_times``)."""
    starts, ends = [t[0] for t in times.values()], [t[1] for t in times.values()]
    return {"start_spread_ms": max(starts) - min(starts), "finish_spread_ms": max(ends) - min(ends)}


# --- when each client ran: its IOPS log ---------------------------------------------------------------

LOG_PREFIX = "lb"  # write_iops_log's name; fio's client writes it in its directory as <name>.<hostname>
LOG_POINTS = 200  # log entries per job over the runtime: the resolution of the finish


LOG_MIN_MS = 10


def log_interval_ms(w: FioWorkload) -> int:
    """log_avg_msec: 1/200 of the runtime (10 ms at least), so a log has about 200 lines at any runtime. A job
    file's jobs run as long as their I/O takes, their ``runtime=`` often only a cap, and fio logs nothing of a
    job shorter than the interval: the shortest, so that any job a trial can time has a line."""
    if w.job_file:
        return LOG_MIN_MS
    return max(LOG_MIN_MS, round(w.runtime_s * 1000 / LOG_POINTS))


def log_files(index: int, numjobs: int) -> list[str]:
    """The IOPS logs fio's client writes for client ``index``: one per job, ``lb_iops.<job>.log.c0.sock``."""
    return [f"{LOG_PREFIX}_iops.{j}.log.{socket_name(index)}" for j in range(1, numjobs + 1)]


def log_end(texts: list[str]) -> float:
    """When a client's measured window ended, in ms since the epoch: the last entry of its jobs' IOPS logs
    (``log_unix_epoch``). Only the end: fio's client rewrites a log file with each chunk the server sends,
    so a long log keeps its last chunk alone (seen here: 74 of 100 entries, the first ones gone)."""
    lasts = []
    for text in texts:
        times = [int(line.split(",", 1)[0]) for line in text.splitlines() if line.strip()]
        lasts += [max(times)] if times else []  # a job shorter than the log's interval logs nothing
    if not texts:
        raise fio.FioParseError("no IOPS log for a client")
    if not lasts:
        raise fio.FioParseError(
            f"fio's IOPS logs of a client are empty: its jobs ran less than the log's {LOG_MIN_MS} ms or more; "
            "give them more to do (size:) or a runtime"
        )
    return float(max(lasts))


def client_times(
    result: ClientsResult, ends: dict[int, float], phases: dict[int, int] | None = None
) -> dict[int, tuple[float, float]]:
    """Each client's measured window, (start, end) in ms since the epoch: its log's end less the time fio
    measured for its jobs (a job file's groups in turn: ``phases``; job_runtime is summed over clones)."""
    return {
        c.index: (ends[c.index] - fio.wall_ms(fio.FioResult(result.version, list(c.jobs)), phases), ends[c.index])
        for c in result.clients
    }


def _ops(version: str, jobs: tuple[fio.FioJob, ...], phases: dict[int, int] | None) -> float:
    ops = fio.total_ops(fio.FioResult(version, list(jobs)), phases)
    return 0.0 if math.isnan(ops) else ops
