"""fio's latency log: latency over time within a trial, averaged per interval.

``argv`` asks fio for it (``--write_lat_log=PREFIX --log_avg_msec=N``): each job writes
``PREFIX_lat.<job>.log`` (and ``_clat``, ``_slat``), one line per interval and direction with
the mean latency of the I/Os completed in it. ``files`` names the total-latency logs of a
workload's jobs, which the trial reads back (one ``cat``, the jobs one after another) and the
store keeps as fio wrote them; ``parse`` and ``intervals`` are pure, tested on logs captured
from real runs (tests/data/fio/3.33/latlog-*).

What fio 3.33 writes (seen on the development host):

- A line is ``time, value, direction, block size, offset``: the time in ms since measuring
  began (after ``ramp_time``: the ramp is not logged), the interval's mean latency in ns, the
  direction 0 (read), 1 (write) or 2 (trim); block size and offset are 0 when averaging.
- Times jitter a few ms (``303`` for ``300``) and differ a little between jobs.
- When a job ends, it flushes what it averaged since its last interval, stamped with that
  interval's time again (``1000, 147343`` then ``1000, 46973``): a partial interval of a few
  I/Os, left out here.

"""

from __future__ import annotations

from dataclasses import dataclass

from layerbench.errors import LayerbenchError
from layerbench.spec.models import FioWorkload

DIRECTIONS = {0: "read", 1: "write", 2: "trim"}
# About this many intervals per trial, each between these bounds: a 5 s trial logs every 100 ms,
# a minute every 1.2 s, an hour every 10 s.
POINTS = 50
MIN_MS, MAX_MS = 100, 10_000


class FioLogError(LayerbenchError):
    """A latency log that is not what fio writes."""


@dataclass(frozen=True)
class Entry:
    t_ms: int  # since measuring began (the ramp is not logged)
    value_ns: float
    direction: str


@dataclass(frozen=True)
class Interval:
    """One interval of a trial: the mean over its jobs of each job's mean latency."""

    t_s: float  # the interval's end, seconds since the jobs started
    direction: str
    mean_ns: float
    jobs: int  # how many jobs logged it (fewer at the edges, where a job's clock ran a little apart)


def interval_ms(w: FioWorkload) -> int:
    """The averaging interval for a workload's trial: about POINTS intervals over its measured time."""
    return int(min(MAX_MS, max(MIN_MS, round(w.runtime_s * 1000 / POINTS, -2))))


def wanted(w: FioWorkload) -> bool:
    """fio is asked for the log where layerbench builds the command line (a job file has its own options)."""
    return not (w.job_file or w.personality)


def argv(prefix: str, every_ms: int) -> list[str]:
    return [f"--write_lat_log={prefix}", f"--log_avg_msec={every_ms}"]


def prefix(directory: str, name: str) -> str:
    return f"{directory.rstrip('/')}/lb-{name}"


def files(log_prefix: str, numjobs: int) -> list[str]:
    """The total-latency logs fio writes for a workload of ``numjobs`` jobs (numbered from 1)."""
    return [f"{log_prefix}_lat.{job}.log" for job in range(1, numjobs + 1)]


def written(log_prefix: str, numjobs: int) -> list[str]:
    """Every log fio writes for it: total, completion and submission latency."""
    return [f"{log_prefix}_{kind}.{job}.log" for kind in ("lat", "clat", "slat") for job in range(1, numjobs + 1)]


def parse(text: str) -> list[list[Entry]]:
    """Each job's entries, from one log or several concatenated (a job's times never go back: where they do,
    the next job's log began)."""
    jobs: list[list[Entry]] = []
    last = None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split(",")]
        try:
            t, value, ddir = int(fields[0]), float(fields[1]), int(fields[2])
        except (IndexError, ValueError) as exc:
            what = f"{line.strip()[:80]!r} is not 'time, value, direction, ...'"
            raise FioLogError(f"fio latency log, line {number}: {what}") from exc
        if ddir not in DIRECTIONS:
            raise FioLogError(f"fio latency log, line {number}: direction {ddir} is none of 0, 1, 2")
        if last is None or t < last:
            jobs.append([])
        jobs[-1].append(Entry(t, value, DIRECTIONS[ddir]))
        last = t
    return jobs


def intervals(jobs: list[list[Entry]], every_ms: int) -> list[Interval]:
    """Each job's entries put in the interval they close (their time rounded to a multiple of ``every_ms``),
    a job's second entry in one interval (its partial last one) left out, then averaged over the jobs;
    ordered by direction, then time."""
    buckets: dict[tuple[str, int], list[float]] = {}
    for entries in jobs:
        seen: set[tuple[str, int]] = set()
        for e in entries:
            key = (e.direction, max(1, round(e.t_ms / every_ms)))
            if key not in seen:
                seen.add(key)
                buckets.setdefault(key, []).append(e.value_ns)
    return [Interval(slot * every_ms / 1000, d, sum(v) / len(v), len(v)) for (d, slot), v in sorted(buckets.items())]
