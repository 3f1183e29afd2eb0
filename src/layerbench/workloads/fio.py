"""The fio adapter: command lines in, typed results out.

``argv``, ``precondition_argv`` and ``steady_argv`` build argument lists;
``rewrite_job_file`` points a user's own job file at the placement; ``parse``
is a pure function over fio's ``--output-format=json+`` text, tested on output
captured from real runs (tests/data/fio/<version>/).

What fio 3.33 does that shapes this module (each seen on the development host):

- A fractional ``--runtime=1.5`` or ``--ramp_time=0.5`` is silently truncated
  to whole seconds; ``1500ms`` is kept. Times are therefore passed in ms.
- A sequential write of ``--size`` that is not a multiple of ``--bs`` stops at
  the last whole block and leaves the tail unwritten (reads of it are zeros
  that never reach the device), so the precondition's block divides the size.
- With ``--steadystate`` the JSON can hold a bare ``-nan`` (not JSON); it is
  read as NaN.
- Warnings ("fio: ...", "note: ...") go to stdout before the JSON document.
"""

from __future__ import annotations

import base64
import json
import math
import re
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from layerbench.errors import LayerbenchError
from layerbench.proc import Runner
from layerbench.records.sample import Sample
from layerbench.spec.models import FioWorkload
from layerbench.spec.transports import fio_export_args, fio_export_env
from layerbench.workloads import fio_log

DIRECTIONS = ("read", "write", "trim")
LAT_KINDS = ("slat", "clat", "lat")
PERCENTILES = {"50.000000": "p50", "90.000000": "p90", "95.000000": "p95", "99.000000": "p99", "99.900000": "p99.9"}
PRECONDITION_BS = 2**20


class FioParseError(LayerbenchError):
    """fio's output (or a job file) was not what we can read."""


@dataclass(frozen=True)
class LatStats:
    mean_ns: float
    stddev_ns: float
    min_ns: float
    max_ns: float
    percentiles: dict[str, float] = field(default_factory=dict)  # "p50", "p99.9", ... (ns)


@dataclass(frozen=True)
class FioDirection:
    total_ios: int
    io_bytes: int
    iops: float
    bw_bytes: float
    runtime_ms: int
    lat: dict[str, LatStats]  # "slat", "clat", "lat"; a kind fio did not measure (N = 0) is absent
    clat_bins: dict[int, int]  # json+ histogram: latency (ns) → count; empty for plain json


@dataclass(frozen=True)
class FioJob:
    name: str
    groupid: int
    error: int
    directions: dict[str, FioDirection]  # directions that moved no data are absent
    runtime_ms: int | None = None  # fio's job_runtime (summed over the jobs of a reported group); None if absent


@dataclass(frozen=True)
class FioResult:
    version: str
    jobs: list[FioJob]


# --- command lines -------------------------------------------------------------------------------


def data_file(path: str, size: int, mode: str = "fill") -> str:
    """One file per size and preconditioning, shared by every workload (and job) that needs it."""
    suffix = "" if mode in ("fill", "steady") else f"-{mode}"  # sparse and fresh files stand apart
    return f"{path.rstrip('/')}/lb-{size}{suffix}.dat"


def over_export(args: list[str]) -> list[str]:
    """Where the target is a remote export that fio's own engine for its transport reaches (a remote device
    with fio as its client, spec/transports/), fio reaches it itself: that engine's arguments instead of a
    file and an engine (and nothing to unlink)."""
    files = [a.removeprefix("--filename=") for a in args if a.startswith("--filename=")]
    reach = next(((f, found) for f in files if (found := fio_export_args(f)) is not None), None)
    if reach is None:
        return args
    kept = [a for a in args if not a.startswith(("--filename=", "--ioengine=", "--unlink="))]
    env = [f"{k}={v}" for k, v in fio_export_env(reach[0]).items()]
    return [*(["env", *env] if env else []), *kept, *reach[1]]


def _target(path: str, path_is_device: bool, size: int, mode: str = "fill") -> str:
    return path if path_is_device else data_file(path, size, mode)


def _ms(seconds: float) -> str:
    # fio truncates fractional seconds ("--runtime=1.5" runs 1 s) but keeps milliseconds.
    return f"{round(seconds * 1000)}ms"


def argv(w: FioWorkload, path: str, path_is_device: bool, fio: str = "fio", lat_log: str | None = None) -> list[str]:
    """The command line of one workload: all its jobs share one prefilled file and report as one group;
    ``lat_log``: where its jobs' latency logs go (a prefix, workloads/fio_log.py), averaged per interval."""
    args = [
        fio,
        f"--name={w.name}",
        f"--filename={_target(path, path_is_device, int(w.size), w.precondition)}",
        f"--rw={w.rw}",
        f"--bs={int(w.bs)}",
        f"--numjobs={w.numjobs}",
        f"--iodepth={w.iodepth}",
        f"--size={int(w.size)}",
        f"--runtime={_ms(w.runtime_s)}",
        f"--time_based={int(w.time_based)}",
        f"--ramp_time={_ms(w.ramp_s)}",
        f"--direct={int(w.direct)}",
        f"--ioengine={w.ioengine}",
        # Fresh random data for every write: zram and some SSDs compress or deduplicate.
        "--refill_buffers=1",
        "--randrepeat=0",
        # Never rewrite an existing file first (fio's default, stated): the precondition filled it.
        "--overwrite=0",
        "--group_reporting=1",
        "--output-format=json+",
    ]
    if w.rwmixread is not None:
        args.append(f"--rwmixread={w.rwmixread}")
    if w.precondition == "none":
        args.append("--unlink=1")  # the next trial writes a fresh file too
    if w.steadystate:
        args += [f"--steadystate={w.steadystate}", f"--ss_dur={_whole_s(w.ss_dur_s)}"]
    if w.verify is not None:
        # Each block written with its checksum, read back after the trial (verify_only_argv), from a known seed
        # so the read-back replays the same offsets.
        # fio saves a verify state file in its working directory unless told not to.
        args += [f"--verify={w.verify}", "--do_verify=0", f"--randseed={VERIFY_SEED}", "--verify_state_save=0"]
    if lat_log is not None:
        args += fio_log.argv(lat_log, fio_log.interval_ms(w))
    return over_export(args)


VERIFY_SEED = 20261207
VERIFY_ERROR = re.compile(r"^verify: .*$", re.MULTILINE)


def verify_only_argv(trial_argv: list[str]) -> list[str]:
    """A verify workload's trial read back: fio replays its offsets and checks every block's checksum, stopping
    at the first bad one. ``--verify_only`` without ``--do_verify=1`` reads nothing and reports success."""
    return [*trial_argv, "--verify_only", "--do_verify=1", "--verify_fatal=1"]


def verify_error(output: str) -> str | None:
    """fio's own words for the first bad block ("verify: bad magic header 0, wanted acca at file F offset N...")."""
    found = VERIFY_ERROR.search(output)
    return found.group(0) if found else None


def verified_bytes(stdout: str) -> int:
    """What a read-back (verify_only_argv) read and checked."""
    return sum(d.io_bytes for j in parse(stdout).jobs for k, d in j.directions.items() if k == "read")


def _whole_s(seconds: float) -> str:
    # fio judges steady state on one sample per second: "--ss_dur=1500ms" is a 1 s window.
    return str(max(1, math.ceil(seconds)))


def precondition_argv(size: int, path: str, path_is_device: bool, fio: str = "fio") -> list[str]:
    """Write the whole test file (or region) once with incompressible data.

    A file that was never written reads as zeros without touching the device,
    and zram stores zero pages for free: either would flatter every read. The
    block divides ``size`` because fio skips a last, partial block.
    """
    args = [
        fio,
        "--name=precondition",
        f"--filename={_target(path, path_is_device, size)}",
        "--rw=write",
        f"--bs={math.gcd(size, PRECONDITION_BS)}",
        f"--size={size}",
        "--direct=1",
        "--ioengine=libaio",
        "--iodepth=16",
        "--refill_buffers=1",
        "--end_fsync=1",
        "--output-format=json",
    ]
    return over_export(args)


def io_uring_probe_argv(path: str, path_is_device: bool, fio: str = "fio") -> list[str]:
    """One 4 KiB I/O with io_uring where a workload will run, before its trial: a seccomp profile that
    blocks io_uring (Docker 25+ and containerd 2.0 by default) fails here. A device is read, never written;
    in a directory the probe writes a file of its own and removes it."""
    where = path if path_is_device else f"{path}/.lb-io_uring-probe"
    return [
        fio,
        "--name=io_uring-probe",
        f"--filename={where}",
        "--rw=read" if path_is_device else "--rw=write",
        "--bs=4k",
        "--size=4k",
        "--ioengine=io_uring",
        *([] if path_is_device else ["--unlink=1"]),
        "--output-format=json",
    ]


# fio's own words when the kernel refuses io_uring (measured under a seccomp filter that answers EPERM):
# "fio: pid=9, err=1/file:engines/io_uring.c:998, func=io_queue_init, error=Operation not permitted".
_IO_URING_REFUSED = re.compile(r"func=io_queue_init, error=([^\n]+)")


def io_uring_refused(output: str) -> str | None:
    """What the kernel answered fio's io_uring set-up (e.g. "Operation not permitted"), or None. fio 3.33
    prints it on stdout, before its JSON."""
    found = _IO_URING_REFUSED.search(output)
    return found.group(1).strip() if found else None


def steady_argv(
    size: int, path: str, path_is_device: bool, window_s: float = 30, max_s: float = 600, fio: str = "fio"
) -> list[str]:
    """Random 4k writes until fio's detector sees flat IOPS (slope under 0.3% over ``window_s``), capped.

    Flash and copy-on-write filesystems slow down as they fill and fragment; a
    fresh file overstates their write speed until this settles.
    """
    args = [
        fio,
        "--name=steady",
        f"--filename={_target(path, path_is_device, size)}",
        "--rw=randwrite",
        "--bs=4k",
        f"--size={size}",
        "--direct=1",
        "--ioengine=libaio",
        "--iodepth=32",
        "--refill_buffers=1",
        "--randrepeat=0",
        "--overwrite=0",
        "--time_based=1",
        f"--runtime={_ms(max_s)}",
        "--steadystate=iops_slope:0.3%",
        f"--ss_dur={_whole_s(window_s)}",
        f"--ss_ramp={_ms(window_s / 3)}",
        "--output-format=json",
    ]
    return over_export(args)


def sparse_argv(size: int, path: str) -> list[str]:
    """A file of the right size that was never written: every read is answered with zeros."""
    return ["truncate", f"--size={size}", data_file(path, size, "sparse")]


def job_file_argv(job_path: str, fio: str = "fio") -> list[str]:
    """Results stay per job (no group_reporting): the file's own structure is the point."""
    return [fio, "--output-format=json+", job_path]


# --- a user's own job file -----------------------------------------------------------------------

# Options that name where a job does its I/O; all are re-pointed at the placement.
_WHERE = ("filename", "directory", "opendir", "filename_format")


def rewrite_job_file(text: str, path: str, path_is_device: bool) -> str:
    """A user's own job file, pointed at the placement; everything else kept line for line.

    ``directory=``/``opendir=`` are dropped and the placement is set in the first
    [global]; a ``filename=`` or ``filename_format=`` stays only if it is relative
    (so inside the placement: two sections can still share a file), and for a
    device every ``filename=`` goes. Sections, duplicate section names (fio runs
    each as its own job), ``stonewall``/``new_group`` and comments are kept,
    which is why this is not configparser: it merges duplicate sections.
    """
    kept: list[str] = []
    in_section = False
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped[0] in ";#" or re.match(r"include\s", stripped):
            kept.append(line)
        elif stripped.startswith("["):
            _check_section(stripped, number)
            in_section = True
            kept.append(line)
        elif not in_section:
            raise FioParseError(f"fio job file, line {number}: option {stripped!r} comes before any [section]")
        elif not _points_elsewhere(stripped, path_is_device):
            kept.append(line)
    return "\n".join(_with_placement(kept, path, path_is_device)) + "\n"


def _check_section(header: str, number: int) -> None:
    if not re.fullmatch(r"\[[^\]]+\]", header):
        raise FioParseError(f"fio job file, line {number}: {header!r} is not a [section] header")


def _points_elsewhere(option: str, path_is_device: bool) -> bool:
    key, _, value = (part.strip() for part in option.partition("="))
    if key not in _WHERE:
        return False
    if key in ("directory", "opendir") or (key == "filename" and path_is_device):
        return True
    # fio separates several files with ':'; each must stay below the placement directory.
    return any(p.startswith("/") or ".." in p.split("/") for p in value.split(":"))


def _with_placement(lines: list[str], path: str, path_is_device: bool) -> list[str]:
    setting = f"{'filename' if path_is_device else 'directory'}={path}"
    first = next((i for i, ln in enumerate(lines) if ln.strip().startswith("[")), None)
    if first is not None and re.fullmatch(r"\[\s*global\s*\]", lines[first].strip()):
        return [*lines[: first + 1], setting, *lines[first + 1 :]]
    return ["[global]", setting, "", *lines]


# --- output ----------------------------------------------------------------------------------------


def parse(text: str) -> FioResult:
    """fio's JSON (plain or json+) as typed results; warnings printed before it are skipped."""
    data = _json_object(text)
    try:
        # fio's client (workloads/fio_clients.py) reports each client's job, and its sum of them, apart.
        listed = data["jobs"] if "jobs" in data or "client_stats" not in data else _clients_jobs(data)
        jobs = [_job(j) for j in listed]
        version = str(data["fio version"])
    except (KeyError, TypeError, ValueError) as exc:
        raise FioParseError(f"fio JSON lacks an expected field: {exc!r}") from exc
    if not jobs:
        raise FioParseError("fio JSON reports no jobs")
    return FioResult(version=version, jobs=jobs)


# A trial's logs entry with its completion histograms (``bins_text``): what `show --latency`, `show --json` and
# the report merge, read without parsing the trial's whole output again (46 s of a million-sample run's first
# `show --json` was that parsing).
BINS_LOG = "clat_bins"


def completion_bins(result: FioResult) -> dict[str, dict[int, int]]:
    """Each direction's completion-latency histogram (ns -> I/Os), merged over the jobs (a client's jobs
    too); a direction whose jobs have no bins (plain json) maps to an empty one."""
    out: dict[str, dict[int, int]] = {}
    for job in result.jobs:
        for direction, data in job.directions.items():
            merged = out.setdefault(direction, {})
            for ns, count in data.clat_bins.items():
                merged[ns] = merged.get(ns, 0) + count
    return out


def bins_text(bins: dict[str, dict[int, int]]) -> str:
    """``completion_bins`` as a trial keeps it: a line per direction, "DIRECTION STEPS COUNTS": its latencies
    (ascending) as steps from 0 and their counts, each as little-endian int64s, zlib-compressed, in base64.
    A reader decodes them as arrays; a json+ output's 516 bins take 1.6 KB so (11 KB as plain int64s, beside
    22 KB of output)."""
    lines = []
    for direction, merged in bins.items():
        ns = sorted(merged)
        steps = [b - a for a, b in zip([0, *ns], ns, strict=False)]
        lines.append(f"{direction} {_packed(steps)} {_packed([merged[v] for v in ns])}")
    return "".join(f"{line}\n" for line in lines)


def _packed(values: list[int]) -> str:
    return base64.b64encode(zlib.compress(struct.pack(f"<{len(values)}q", *values))).decode("ascii")


def _clients_jobs(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [j for j in data["client_stats"] if j.get("jobname") != CLIENTS_AGGREGATE]


CLIENTS_AGGREGATE = "All clients"


def json_object(text: str) -> dict[str, Any]:
    """The JSON document in fio's output (warnings before it skipped, bare nan read as NaN)."""
    return _json_object(text)


def job(j: dict[str, Any]) -> FioJob:
    """One job object of fio's JSON, typed."""
    return _job(j)


def steady_attained(text: str) -> bool:
    """Whether a steady_argv run ended on fio's detector rather than at its cap."""
    try:
        return all(int(j["steadystate"]["attained"]) == 1 for j in _json_object(text)["jobs"])
    except (KeyError, TypeError, ValueError) as exc:
        raise FioParseError(f"fio JSON lacks its steadystate field: {exc!r}") from exc


# A string (skipped whole), or a bare nan/inf that fio printed with "%f" where a number belongs.
_NON_FINITE = re.compile(r'"(?:\\.|[^"\\])*"|(?<=[:\[,])(\s*)(-?)(nan|inf)\b')


def _json_object(text: str) -> dict[str, Any]:
    match = re.search(r"^\{", text, flags=re.MULTILINE)
    if not match:
        head = text.strip().splitlines()[:2]
        raise FioParseError(f"no JSON in fio output: {' | '.join(head) or '(empty)'}")
    try:
        # Valid JSON as it stands has no bare nan/inf for the substitution to fix: read it directly (the
        # substitution is 90% of a parse: it reads every string; a long run's show parses 84,000 outputs).
        obj = json.JSONDecoder().raw_decode(text[match.start() :])[0]
    except json.JSONDecodeError:
        body = _NON_FINITE.sub(_finite_token, text[match.start() :])
        try:
            obj = json.JSONDecoder().raw_decode(body)[0]
        except json.JSONDecodeError as exc:
            raise FioParseError(f"fio JSON is malformed: {exc}") from exc
    if not isinstance(obj, dict):
        raise FioParseError("fio JSON is not an object")
    return obj


def _finite_token(m: re.Match[str]) -> str:
    if m.group(3) is None:
        return m.group(0)
    return m.group(1) + ("NaN" if m.group(3) == "nan" else f"{m.group(2)}Infinity")


def _job(j: dict[str, Any]) -> FioJob:
    dirs = {d: _direction(j[d]) for d in DIRECTIONS if d in j and int(j[d]["io_bytes"]) > 0}
    runtime = j.get("job_runtime")
    return FioJob(
        name=str(j["jobname"]),
        groupid=int(j["groupid"]),
        error=int(j["error"]),
        directions=dirs,
        runtime_ms=None if runtime is None else int(runtime),
    )


def _direction(d: dict[str, Any]) -> FioDirection:
    bins = d["clat_ns"].get("bins", {})  # only json+ has them
    return FioDirection(
        total_ios=int(d["total_ios"]),
        io_bytes=int(d["io_bytes"]),
        iops=float(d["iops"]),
        bw_bytes=float(d["bw_bytes"]),
        runtime_ms=int(d["runtime"]),
        # N = 0: not measured (slat under a sync engine), not a latency of 0 ns.
        lat={k: _lat(d[f"{k}_ns"]) for k in LAT_KINDS if f"{k}_ns" in d and int(d[f"{k}_ns"]["N"]) > 0},
        clat_bins={int(k): int(v) for k, v in bins.items()},
    )


def _lat(s: dict[str, Any]) -> LatStats:
    pct = {PERCENTILES.get(k, _pname(k)): float(v) for k, v in s.get("percentile", {}).items()}
    return LatStats(float(s["mean"]), float(s["stddev"]), float(s["min"]), float(s["max"]), pct)


def _pname(key: str) -> str:
    return f"p{float(key):g}"


def group_phases(text: str) -> dict[int, int]:
    """A job file's reporting groups (fio's groupid) → the phase each runs in, in order.

    As fio numbers them: a job with ``stonewall`` or ``new_group`` after others starts a new
    group, but only ``stonewall`` makes it wait for every job before it (a new phase); a
    ``new_group`` runs beside the group before it. ``numjobs`` clones share their job's group.
    Options in a ``[global]`` apply to the sections after it.
    """
    phases: dict[int, int] = {}
    group = phase = jobs_before = 0
    glob: set[str] = set()
    section: str | None = None
    flags: set[str] = set()

    def close() -> None:
        nonlocal group, phase, jobs_before
        if section == "global":
            glob.update(flags)
        if section in (None, "global"):
            return
        own = flags | glob
        if jobs_before and own & {"stonewall", "new_group"}:
            group += 1
            phase += "stonewall" in own
        phases[group] = phase
        jobs_before += 1

    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            close()
            section, flags = stripped[1:-1].strip().lower(), set()
        elif stripped and stripped[0] not in ";#":
            key, _, value = (part.strip() for part in stripped.partition("="))
            if key in ("stonewall", "wait_for_previous", "new_group") and value in ("", "1"):
                flags.add("new_group" if key == "new_group" else "stonewall")
    close()
    return phases


def total_ops(result: FioResult, phases: dict[int, int] | None = None) -> float:
    """Operations of every job over the job file's wall time: a personality's ops/s (Filebench's figure).

    A group's wall time is its longest direction's runtime (the group's wall time under
    group_reporting; fio's job_runtime is summed over a reported group's jobs, numjobs times too
    long). ``phases`` (``group_phases`` of the job file) says which groups run one after another
    (``stonewall``): the wall time is the sum over phases of each phase's longest group, so two
    60 s groups in turn ran for 120 s, not 60. Without it every group is taken as its own phase,
    as fio runs groups made by ``stonewall``.
    """
    ios = sum(d.total_ios for j in result.jobs for d in j.directions.values())
    wall = wall_ms(result, phases)
    return ios / (wall / 1000) if wall else float("nan")


def wall_ms(result: FioResult, phases: dict[int, int] | None = None) -> int:
    """How long the jobs ran, one phase after another: each phase's longest direction's runtime, summed
    (``total_ops`` says why)."""
    walls: dict[int, int] = {}
    for j in result.jobs:
        phase = j.groupid if phases is None else phases.get(j.groupid, j.groupid)
        for d in j.directions.values():
            walls[phase] = max(walls.get(phase, 0), d.runtime_ms)
    return sum(walls.values())


def samples(result: FioResult, phases: dict[int, int] | None = None) -> list[Sample]:
    """Per job and direction: iops, bw, io_bytes, and each latency kind's mean and standard percentiles;
    ``phases``: the job file's ``group_phases``, for its ops/s."""
    out: list[Sample] = []
    ops = total_ops(result, phases)
    if not math.isnan(ops):
        out.append(Sample("ops", ops, "ops/s"))
    for job in result.jobs:
        for direction, d in job.directions.items():
            add = _adder(out, direction, job.name)
            add("iops", d.iops, "IO/s")
            add("bw", d.bw_bytes, "B/s")
            add("io_bytes", float(d.io_bytes), "B")
            for kind, stats in d.lat.items():
                add(f"{kind}_mean", stats.mean_ns, "ns")
                for name in PERCENTILES.values():
                    if name in stats.percentiles:
                        add(f"{kind}_{name}", stats.percentiles[name], "ns")
    return out


def _adder(out: list[Sample], direction: str, job: str) -> Callable[[str, float, str], None]:
    def add(metric: str, value: float, unit: str) -> None:
        out.append(Sample(metric, value, unit, direction, job))

    return add


def fio_version(runner: Runner, fio: str = "fio") -> str:
    """What ``fio --version`` prints, e.g. "fio-3.33"."""
    return runner([fio, "--version"], timeout=20).check().stdout.strip()
