"""The fio adapter: command lines in, typed results out.

``argv`` and ``precondition_argv`` build argument lists; ``parse`` is a pure
function over fio's ``--output-format=json+`` text, tested on output captured
from real runs (tests/data/fio/<version>/).
"""

from __future__ import annotations

import configparser
import io
import json
import re
from dataclasses import dataclass, field
from typing import Any

from layerbench.errors import LayerbenchError
from layerbench.sample import Sample
from layerbench.spec.models import FioWorkload

DIRECTIONS = ("read", "write", "trim")
LAT_KINDS = ("slat", "clat", "lat")
PERCENTILES = {"50.000000": "p50", "90.000000": "p90", "95.000000": "p95", "99.000000": "p99", "99.900000": "p99.9"}


class FioParseError(LayerbenchError):
    """fio's output was not the JSON we asked for."""


@dataclass(frozen=True)
class LatStats:
    mean_ns: float
    stddev_ns: float
    min_ns: float
    max_ns: float
    percentiles: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class FioDirection:
    total_ios: int
    io_bytes: int
    iops: float
    bw_bytes: float
    runtime_ms: int
    lat: dict[str, LatStats]  # "slat", "clat", "lat"
    clat_bins: dict[int, int]  # json+ histogram: latency (ns) → count


@dataclass(frozen=True)
class FioJob:
    name: str
    groupid: int
    error: int
    directions: dict[str, FioDirection]
    runtime_ms: int = 0


@dataclass(frozen=True)
class FioResult:
    version: str
    jobs: list[FioJob]


def data_file(path: str, size: int, mode: str = "fill") -> str:
    """One file per size and preconditioning, shared by every workload that needs it."""
    suffix = "" if mode in ("fill", "steady") else f"-{mode}"  # sparse and fresh files stand apart
    return f"{path.rstrip('/')}/lb-{size}{suffix}.dat"


def _target(path: str, path_is_device: bool, size: int, mode: str = "fill") -> str:
    return path if path_is_device else data_file(path, size, mode)


def argv(w: FioWorkload, path: str, path_is_device: bool, fio: str = "fio") -> list[str]:
    args = [
        fio,
        f"--name={w.name}",
        f"--filename={_target(path, path_is_device, int(w.size), w.precondition)}",
        f"--rw={w.rw}",
        f"--bs={int(w.bs)}",
        f"--numjobs={w.numjobs}",
        f"--iodepth={w.iodepth}",
        f"--size={int(w.size)}",
        f"--runtime={w.runtime_s:g}",
        f"--time_based={int(w.time_based)}",
        f"--ramp_time={w.ramp_s:g}",
        f"--direct={int(w.direct)}",
        f"--ioengine={w.ioengine}",
        # Incompressible, fresh data for every write: zram and some SSDs compress.
        "--refill_buffers=1",
        "--randrepeat=0",
        # Never re-lay the file out: it was filled by the preconditioning.
        "--overwrite=0",
        "--group_reporting=1",
        "--output-format=json+",
    ]
    if w.rwmixread is not None:
        args.append(f"--rwmixread={w.rwmixread}")
    if w.precondition == "none":
        args.append("--unlink=1")  # the next trial writes a fresh file too
    if w.steadystate:
        args += [f"--steadystate={w.steadystate}", f"--ss_dur={w.ss_dur_s:g}"]
    return args


def precondition_argv(size: int, path: str, path_is_device: bool, fio: str = "fio") -> list[str]:
    """Write the whole test file (or region) once with incompressible data.

    A file that was never written reads as zeros without touching the device,
    and zram stores zero pages for free: either would flatter every read.
    """
    return [
        fio,
        "--name=precondition",
        f"--filename={_target(path, path_is_device, size)}",
        "--rw=write",
        "--bs=1M",
        f"--size={size}",
        "--direct=1",
        "--ioengine=libaio",
        "--iodepth=16",
        "--refill_buffers=1",
        "--end_fsync=1",
        "--output-format=json",
    ]


def rewrite_job_file(text: str, path: str, path_is_device: bool) -> str:
    """A user's own job file, pointed at the placement; its sections and groups kept.

    Every ``filename=``/``directory=`` is dropped and one is set in [global], so
    no job can touch anything but the placement under test.
    """
    parser = configparser.ConfigParser(allow_no_value=True, interpolation=None, strict=False, delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # fio options are case-sensitive
    try:
        parser.read_string(text)
    except configparser.Error as exc:
        raise FioParseError(f"fio job file is not valid: {exc}") from exc
    if "global" not in parser:
        parser.add_section("global")
    for section in parser.sections():
        for key in ("filename", "directory"):
            parser.remove_option(section, key)
    parser.set("global", "filename" if path_is_device else "directory", path)
    out = io.StringIO()
    parser.write(out, space_around_delimiters=False)
    return out.getvalue()


def steady_argv(
    size: int, path: str, path_is_device: bool, window_s: float = 30, max_s: float = 600, fio: str = "fio"
) -> list[str]:
    """Random 4k writes until fio's detector sees flat IOPS (slope under 0.3% over ``window_s``), capped.

    Flash and copy-on-write filesystems slow down as they fill and fragment; a
    fresh file overstates their write speed until this settles.
    """
    return [
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
        f"--runtime={max_s:g}",
        "--steadystate=iops_slope:0.3%",
        f"--ss_dur={window_s:g}",
        f"--ss_ramp={window_s / 3:g}",
        "--output-format=json",
    ]


def sparse_argv(size: int, path: str) -> list[str]:
    """A file of the right size that was never written: every read is answered with zeros."""
    return ["truncate", f"--size={size}", data_file(path, size, "sparse")]


def job_file_argv(job_path: str, fio: str = "fio") -> list[str]:
    """Results stay per job (no group_reporting): the file's own structure is the point."""
    return [fio, "--output-format=json+", job_path]


def parse(text: str) -> FioResult:
    data = _json_object(text)
    try:
        jobs = [_job(j) for j in data["jobs"]]
        return FioResult(version=str(data["fio version"]), jobs=jobs)
    except (KeyError, TypeError, ValueError) as exc:
        raise FioParseError(f"fio JSON lacks an expected field: {exc!r}") from exc


def _json_object(text: str) -> dict[str, Any]:
    # fio may print warnings ("fio: ...") on stdout before the JSON document.
    match = re.search(r"^\{", text, flags=re.MULTILINE)
    if not match:
        head = text.strip().splitlines()[:2]
        raise FioParseError(f"no JSON in fio output: {' | '.join(head) or '(empty)'}")
    try:
        obj = json.JSONDecoder().raw_decode(text[match.start() :])[0]
    except json.JSONDecodeError as exc:
        raise FioParseError(f"fio JSON is malformed: {exc}") from exc
    if not isinstance(obj, dict):
        raise FioParseError("fio JSON is not an object")
    return obj


def _job(j: dict[str, Any]) -> FioJob:
    dirs = {d: _direction(j[d]) for d in DIRECTIONS if d in j and int(j[d]["io_bytes"]) > 0}
    return FioJob(
        name=str(j["jobname"]),
        groupid=int(j["groupid"]),
        error=int(j["error"]),
        directions=dirs,
        runtime_ms=int(j.get("job_runtime", 0)),
    )


def _direction(d: dict[str, Any]) -> FioDirection:
    bins = d["clat_ns"].get("bins", {})
    return FioDirection(
        total_ios=int(d["total_ios"]),
        io_bytes=int(d["io_bytes"]),
        iops=float(d["iops"]),
        bw_bytes=float(d["bw_bytes"]),
        runtime_ms=int(d["runtime"]),
        lat={k: _lat(d[f"{k}_ns"]) for k in LAT_KINDS if f"{k}_ns" in d},
        clat_bins={int(k): int(v) for k, v in bins.items()},
    )


def _lat(s: dict[str, Any]) -> LatStats:
    pct = {PERCENTILES.get(k, _pname(k)): float(v) for k, v in s.get("percentile", {}).items()}
    return LatStats(float(s["mean"]), float(s["stddev"]), float(s["min"]), float(s["max"]), pct)


def _pname(key: str) -> str:
    return f"p{float(key):g}"


def total_ops(result: FioResult) -> float:
    """Operations of every job over the longest job's runtime: a personality's ops/s (Filebench's figure)."""
    ios = sum(d.total_ios for j in result.jobs for d in j.directions.values())
    longest = max((j.runtime_ms for j in result.jobs), default=0)
    return ios / (longest / 1000) if longest else float("nan")


def samples(result: FioResult) -> list[Sample]:
    out: list[Sample] = []
    ops = total_ops(result)
    if ops == ops:
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


def _adder(out: list[Sample], direction: str, job: str):
    def add(metric: str, value: float, unit: str) -> None:
        out.append(Sample(metric, value, unit, direction, job))

    return add


def fio_version(runner: Any) -> str:
    return runner(["fio", "--version"], timeout=20).check().stdout.strip()
