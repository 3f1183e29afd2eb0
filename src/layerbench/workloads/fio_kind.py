"""fio as a workload type: what generic code asks of it (``WORKLOAD``, registered in ``registry.py``).

Its parts live in ``fio.py`` (command lines, parser), ``fio_log.py`` (its latency
log), ``jobfile.py`` (a user's job file as fio reads it) and
``personalities.py``; this module is the one place that answers for them
together, so that fio.py, which the others import, imports none of them.
"""

from __future__ import annotations

import os
from pathlib import Path

from layerbench.spec import own_files
from layerbench.spec.models import FioWorkload, StackSpec
from layerbench.workloads import fio, fio_log, jobfile, personalities
from layerbench.workloads.kind import Place, WorkloadType

# fio's rw values that write (and the names a finding's workload is read by where fio's rw is unknown).
WRITES = ("write", "randwrite", "rw", "readwrite", "randrw", "trimwrite")
QD1_DIRECTIONS = {"read": "read", "randread": "read", "write": "write", "randwrite": "write"}


def headline(w: FioWorkload) -> str:
    """ops/s for personalities and job files; IOPS for random I/O, bandwidth for sequential I/O."""
    if w.personality or w.job_file:
        return "ops"
    return "iops" if w.rw.startswith("rand") else "bw"


def files(w: FioWorkload) -> dict[str, int]:
    """Its files: a job file's as fio reads it, a personality's, or one fill per size and mode."""
    if w.job_file:
        return {f"job {w.job_file}: {k}": v for k, v in jobfile.footprint(jobfile.of_workload(w)).items()}
    if w.personality:
        text = personalities.job_file(w.personality, w.scale)
        return {f"{w.personality}: {k}": v for k, v in personalities.job_file_bytes(text).items()}
    mode = "fill" if w.precondition == "steady" else w.precondition
    used = 0 if mode == "sparse" else int(w.size)  # never written: holes take no blocks
    return {os.path.basename(fio.data_file("", int(w.size), mode)): used}


def reads(stack: StackSpec, w: FioWorkload) -> str | None:
    """Why a user's job file cannot run on this stack, as fio read it (``jobfile.refusal``), or None."""
    if not w.job_file:
        return None
    raw = stack.placement.kind == "raw"
    return jobfile.refusal(jobfile.of_workload(w), raw, w.allow_outside_placement, w.allow_programs)


def writes(w: FioWorkload, operation: str) -> bool | None:
    return None if w.job_file or w.personality else w.rw in WRITES


def qd1_direction(w: FioWorkload) -> str | None:
    if w.job_file or w.personality or w.iodepth * w.numjobs != 1:
        return None
    return QD1_DIRECTIONS.get(w.rw)


def job_source(w: FioWorkload) -> str | None:
    """The job file a workload runs (a user's own or a personality's), or None for one built from fields."""
    if w.job_file:
        return Path(w.job_file).read_text()
    return personalities.job_file(w.personality, w.scale) if w.personality else None


def running(w: FioWorkload) -> jobfile.JobFile:
    """The workload's job file as a trial runs it: refused if it changed since the run started (an include
    that became unreadable, an edit), since its cells are the content the run started with."""
    jf = jobfile.of_workload(w)
    if jf.error:
        raise fio.FioParseError(f"job file {w.job_file}: {jf.error}")
    if w.job_file and w.job_file_digest and own_files.job_file_digest(w.job_file) != w.job_file_digest:
        raise fio.FioParseError(
            f"job file {w.job_file} (or an include) changed since the run started: put it back to go on "
            "(layerbench resume), or start a new run of it"
        )
    return jf


def argv(w: FioWorkload, place: Place, tools: Path, lat_log: str | None) -> list[str]:
    """fio's command line at the place: a user's job file rewritten for it, a personality's, or the fields'
    (``lat_log``: the prefix of its latency logs, None for none)."""
    if w.job_file:
        text = jobfile.rewrite(running(w), place.path, place.path_is_device, w.allow_outside_placement)
        return fio.job_file_argv(place.put(f"lb-{w.name}.fio", text))
    source = job_source(w)
    if source is not None:
        text = fio.rewrite_job_file(source, place.path, place.path_is_device)
        return fio.job_file_argv(place.put(f"lb-{w.name}.fio", text))
    return fio.argv(w, place.path, place.path_is_device, lat_log=lat_log)


def time_limit_s(w: FioWorkload, slack: float) -> float:
    """How long a trial may take: its runtime and ramp, or, for a job file, its jobs' own if longer (fio's
    ``runtime=`` per job, the workload's ``runtime_s:`` among them where the file gives none)."""
    own = jobfile.duration_s(jobfile.of_workload(w)) if w.job_file else None
    return max(w.runtime_s, own or 0.0) + w.ramp_s + slack


def data_bytes(w: FioWorkload) -> int:
    """Room its files need (a tmpfs is sized by it): a job file's footprint, else its test file."""
    return sum(files(w).values()) if w.job_file else int(w.size)


def needs_precondition(w: FioWorkload) -> bool:
    """Job files and personalities lay out their own files, as fio does; 'none' wants a fresh one."""
    return not (w.job_file or w.personality) and w.precondition != "none"


WORKLOAD = WorkloadType(
    kind="fio",
    comms=("fio",),
    headline=headline,
    data_bytes=data_bytes,
    parse_errors=(fio.FioParseError,),
    files=files,
    reads=reads,
    writes=writes,
    qd1_direction=qd1_direction,
    lat_log=fio_log.wanted,
    lat_log_ms=fio_log.interval_ms,
    argv=argv,
    needs_precondition=needs_precondition,
    # A job file's I/O engine is its own: only the fields' io_uring is probed for.
    uses_io_uring=lambda w: w.ioengine == "io_uring" and w.source_kind() is None,
    ramp_s=lambda w: w.ramp_s if w.source_kind() is None else 0.0,  # a job file's ramp is its own
    time_limit_s=time_limit_s,
    read_back_argv=lambda w, argv: fio.verify_only_argv(argv) if w.verify else None,
)
