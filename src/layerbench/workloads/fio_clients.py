"""fio's client/server mode: N servers, one client driving them all, one JSON document back.

Each target runs ``fio --server=sock:PATH`` (a Unix socket: nothing listens on
any network address); the host runs ``fio --client=sock:PATH1 job1.fio
--client=sock:PATH2 job2.fio ...``, which sends each server its job, starts
them together and prints one JSON document: ``client_stats``, one job object per
client (with ``group_reporting``, each with its ``hostname``: the socket's path),
and, with more than one client, fio's own sum of them named "All clients".

``parse`` is pure and tested on output captured from real runs
(tests/data/fio/<version>/clients-*.json).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from layerbench.analysis.percentiles import percentiles
from layerbench.sample import Sample
from layerbench.spec.models import FioWorkload
from layerbench.workloads import fio

AGGREGATE = fio.CLIENTS_AGGREGATE  # fio's name for its sum of the clients
MERGED = "all"  # the job of the samples merged over clients (as database trials name theirs)
# fio's own options that belong to the client process, not to a job: they stay on its command line.
_LOCAL = ("--output-format=", "--name=")


@dataclass(frozen=True)
class ClientResult:
    index: int
    host: str  # fio's "hostname": the server's socket path here
    job: fio.FioJob
    start_ms: int | None  # fio's job_start: when the job started, ms since the epoch (the server's clock)
    elapsed_s: int | None  # fio's "elapsed": whole seconds the job took, ramp included


@dataclass(frozen=True)
class ClientsResult:
    version: str
    clients: list[ClientResult]
    aggregate: fio.FioJob | None  # fio's "All clients" (absent with one client)

    def result(self) -> fio.FioResult:
        """Every client's job, as one fio result (what device accounting and histograms read)."""
        return fio.FioResult(self.version, [c.job for c in self.clients])


def client_name(index: int) -> str:
    return f"c{index}"


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
    ``fio.argv`` gives one fio, one per line."""
    args = retarget(fio.argv(w, filename, True), filename)[1:]
    lines = [f"[{w.name}]"]
    for a in args:
        if a.startswith(_LOCAL):
            continue
        key, _, value = a.removeprefix("--").partition("=")
        lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"


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
    clients, aggregate = [], None
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
        start, elapsed = s.get("job_start"), s.get("elapsed")
        clients.append(ClientResult(index_of[host], host, job, _int(start), _int(elapsed)))
    missing = sorted(set(range(len(connects))) - {c.index for c in clients})
    if missing:
        raise fio.FioParseError(f"fio client JSON has no result for client(s) {', '.join(map(str, missing))}")
    return ClientsResult(version, sorted(clients, key=lambda c: c.index), aggregate)


def _int(value: object) -> int | None:
    return None if value is None else int(value)  # type: ignore[call-overload]


def samples(result: ClientsResult) -> list[Sample]:
    """Per client (job "c0", "c1", ...): fio's samples of its job, so a trial's IOPS and bandwidth summed over
    jobs are the clients' total; for the trial (job "all"): the clients' ops/s summed, latency of every client
    merged from their histograms, and the clients' start and finish spread."""
    out: list[Sample] = [Sample("ops", sum(_ops(c.job) for c in result.clients), "ops/s", "", MERGED)]
    for c in result.clients:
        named = fio.FioJob(client_name(c.index), c.job.groupid, c.job.error, c.job.directions, c.job.runtime_ms)
        out += [s for s in fio.samples(fio.FioResult(result.version, [named])) if s.metric != "ops"]
    for direction in fio.DIRECTIONS:
        bins = [c.job.directions[direction].clat_bins for c in result.clients if direction in c.job.directions]
        merged = _merged(bins)
        for name, ns in percentiles(merged).items():
            out.append(Sample(f"clat_{name}", ns, "ns", direction, MERGED))
            if name == "p99":  # the scaling curve's tail, named as database trials name theirs
                out.append(Sample("lat_p99_us", ns / 1000, "us", direction, MERGED))
    spread = spreads(result)
    for key, value in spread.items():
        if not math.isnan(value):
            out.append(Sample(key, value, "ms", "", MERGED))
    return out


def _merged(histograms: list[dict[int, int]]) -> dict[int, int]:
    total: dict[int, int] = {}
    for h in histograms:
        for k, v in h.items():
            total[k] = total.get(k, 0) + v
    return total


def spreads(result: ClientsResult) -> dict[str, float]:
    """``start_spread_ms``: between the first and the last client to start (fio's job_start);
    ``finish_spread_ms``: between the first and the last to finish (its start plus its measured runtime and ramp
    that elapsed's whole seconds cannot tell: job_start + its longest direction's runtime; the ramp, the same for
    every client, cancels)."""
    starts = [c.start_ms for c in result.clients if c.start_ms is not None]
    ends = [c.start_ms + _runtime_ms(c.job) for c in result.clients if c.start_ms is not None and c.job.directions]
    return {
        "start_spread_ms": float(max(starts) - min(starts)) if len(starts) == len(result.clients) else math.nan,
        "finish_spread_ms": float(max(ends) - min(ends)) if len(ends) == len(result.clients) else math.nan,
    }


def _runtime_ms(job: fio.FioJob) -> int:
    """A job's measured time: its longest direction's (job_runtime is summed over numjobs' clones)."""
    return max(d.runtime_ms for d in job.directions.values())


def _ops(job: fio.FioJob) -> float:
    ops = fio.total_ops(fio.FioResult("", [job]))
    return 0.0 if math.isnan(ops) else ops
