"""What a workload leaves on the filesystem under test, counted before anything runs.

A peer's job file (2 jobs x 2 GiB) and a 1 GiB workload on a 5 GiB device
failed mid-run with "No space left on device": every workload's files stay on
the filesystem for the stack's life (the next trial reads them again), and a
job file's sizes were never read. Each workload's files are named here, so
files that workloads share (one fill per size, as ``fio.data_file``) count
once, and a cell whose files cannot fit beside its stack's others is refused
with the numbers instead.
"""

from __future__ import annotations

import os

from layerbench.spec.models import FioWorkload, IozoneWorkload, StackSpec, Workload
from layerbench.spec.sizes import parse_size
from layerbench.workloads import fio, jobfile, personalities
from layerbench.workloads.iozone import TMP_NAME

# What a fresh filesystem leaves for files, from mkfs's own figures on 1-8 GiB devices
# (ext4: journal and inode tables, its 5% reserve is root's; btrfs: metadata and system chunks).
USABLE_SHARE = 0.9


def files(w: Workload) -> dict[str, int]:
    """The files `w` keeps on the filesystem: a name that is the same for workloads sharing it → bytes."""
    if isinstance(w, IozoneWorkload):
        return {TMP_NAME: w.sizes[1]}  # one file at a time, the largest last
    if not isinstance(w, FioWorkload):
        return {}  # a database's data set is sized by its server spec, not here
    if w.job_file:
        return {f"job {w.job_file}: {k}": v for k, v in jobfile.footprint(jobfile.of_workload(w)).items()}
    if w.personality:
        text = personalities.job_file(w.personality, w.scale)
        return {f"{w.personality}: {k}": v for k, v in job_file_bytes(text).items()}
    mode = "fill" if w.precondition == "steady" else w.precondition
    used = 0 if mode == "sparse" else int(w.size)  # never written: holes take no blocks
    return {os.path.basename(fio.data_file("", int(w.size), mode)): used}


def refused(stack: StackSpec, w: Workload) -> str | None:
    """Why a user's job file cannot run on this stack, as fio read it (``jobfile.refusal``), or None."""
    if not isinstance(w, FioWorkload) or not w.job_file:
        return None
    raw = stack.placement.kind == "raw"
    return jobfile.refusal(
        jobfile.of_workload(w),
        raw,
        w.allow_outside_placement,
        w.allow_programs,
    )


def job_file_bytes(text: str) -> dict[str, int]:
    """A personality's files (its job file is our own plain fio), as fio lays them out: ``size`` per job
    (else ``nrfiles`` x ``filesize``), times ``numjobs`` unless a ``filename`` names one file the clones share.
    A user's job file is read by fio instead (``jobfile``)."""
    out: dict[str, int] = {}
    defaults: dict[str, str] = {}
    for name, options in _sections(text):
        if name == "global":
            defaults.update(options)
            continue
        o = {**defaults, **options}
        one = _job_bytes(o)
        if "filename" in o:
            out[f"file {o['filename']}"] = max(out.get(f"file {o['filename']}", 0), one)
        else:
            out[f"[{name}]"] = out.get(f"[{name}]", 0) + one * int(o.get("numjobs", "1"))
    return out


def _job_bytes(o: dict[str, str]) -> int:
    if "size" in o and not o["size"].endswith("%"):
        return parse_size(o["size"])
    # A range "4k-64k" lays files out up to its top.
    each = parse_size(o.get("filesize", "0").split("-")[-1].split(":")[-1])
    return each * int(o.get("nrfiles", "1"))


def _sections(text: str) -> list[tuple[str, dict[str, str]]]:
    sections: list[tuple[str, dict[str, str]]] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            sections.append((stripped[1:-1].strip(), {}))
        elif stripped and stripped[0] not in ";#" and sections:
            key, _, value = (part.strip() for part in stripped.partition("="))
            sections[-1][1][key.lower()] = value
    return sections
