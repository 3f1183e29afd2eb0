"""Why a layer costs what it costs, from the profiled trials (`profile: cpu`).

Each profiled cell has one trial recorded by perf across the whole machine.
Per cell: what it spent per I/O (CPU time, split user/system, system calls,
context switches). Per finding whose two cells were both profiled: which
categories of kernel work (seccomp, overlayfs, the memory cgroup, ...) took
more of the CPU, tested (analysis/flame.py), in plain words.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from layerbench.analysis import flame
from layerbench.analysis.findings import Finding
from layerbench.analysis.overhead import headline_metric
from layerbench.analysis.stats import per_trial
from layerbench.store.db import ProfileRecord
from layerbench.store.read import RunData, StoredCell

# Headline metrics that count operations: a rate times the profile's seconds is its work in I/Os.
COUNTED = frozenset({"iops", "ops"})


@dataclass(frozen=True)
class CellCounters:
    """What a profiled trial spent, per I/O where the workload counts them (else per second)."""

    cell_id: str
    samples: int  # busy CPU samples (idle left out)
    cpu_us_per_io: float | None  # busy CPU time per I/O, all processes (µs)
    system_share: float  # of the busy samples, those in the kernel
    syscalls_per_io: float | None
    switches_per_io: float | None
    ios: int | None  # I/Os over the profile's span (rate x seconds), None where the workload counts bytes


@dataclass(frozen=True)
class Pair:
    """A finding whose two cells were both profiled: the differential graph's subject and base."""

    finding: Finding
    subject: str  # cell ids
    reference: str
    growths: list[flame.FrameGrowth]  # per category of kernel work, largest growth first
    lines: list[str]  # flame.explain's lines: what grew, in plain words


def profile_of(record: ProfileRecord) -> flame.Profile:
    return flame.busy(flame.from_folded(record.folded))


def counters(data: RunData) -> list[CellCounters]:
    rates = _profiled_rates(data)
    out = []
    for c in data.cells:
        record = data.profiles.get(c.cell_id)
        if record is not None:
            out.append(_counters(c, record, rates.get(c.cell_id)))
    return out


def _counters(c: StoredCell, record: ProfileRecord, rate: float | None) -> CellCounters:
    busy = profile_of(record)
    seconds = record.counters.get("seconds", 0.0)
    hz = record.counters.get("frequency_hz", 0.0)
    ios = int(rate * seconds) if rate and seconds and headline_metric(c.cell.workload) in COUNTED else None
    kernel = sum(n for stack, n in busy.stacks.items() if stack.endswith(flame.KERNEL_SUFFIX))

    def per_io(value: float | None) -> float | None:
        return value / ios if value is not None and ios else None

    return CellCounters(
        c.cell_id,
        busy.total,
        per_io(1e6 * busy.total / hz) if hz else None,
        kernel / busy.total if busy.total else 0.0,
        per_io(record.counters.get("raw_syscalls:sys_enter")),
        per_io(record.counters.get("context-switches")),
        ios,
    )


def _profiled_rates(data: RunData) -> dict[str, float]:
    """Each profiled cell's headline rate in its profiled trial (the first round's)."""
    profiled = {t.id: t.cell_id for t in data.trials if t.repetition == 0 and t.cell_id in data.profiles}
    out: dict[str, float] = {}
    if data.samples.empty or not profiled:
        return out
    for metric in {headline_metric(c.cell.workload) for c in data.cells if c.cell_id in data.profiles}:
        frame = per_trial(data.samples, metric)
        for trial, value in zip(frame["trial_id"].tolist(), frame["value"].tolist(), strict=True):
            if trial in profiled:
                out[profiled[trial]] = float(value)
    return out


def pairs(data: RunData, findings: Sequence[Finding]) -> list[Pair]:
    """Every finding on a cell's headline whose two cells were profiled, with what grew between them."""
    if not data.profiles:
        return []
    cell = {(c.stack_label, c.workload): c for c in data.cells}
    io = {c.cell_id: c.ios for c in counters(data)}
    out = []
    for f in findings:
        subject, ref = cell.get((f.subject, f.workload)), cell.get((f.reference, f.workload))
        if subject is None or ref is None or not {subject.cell_id, ref.cell_id} <= data.profiles.keys():
            continue  # not profiled, or a finding on one of IOzone's operations (its cell's key differs)
        base, other = profile_of(data.profiles[ref.cell_id]), profile_of(data.profiles[subject.cell_id])
        ios = (io.get(ref.cell_id), io.get(subject.cell_id))
        per_io = ios if None not in ios else (None, None)
        growths = flame.diff_categories(base, other, *per_io)
        lines = flame.explain(growths, labels=labels(subject, ref))
        out.append(Pair(f, subject.cell_id, ref.cell_id, growths, lines))
    return out


def labels(subject: StoredCell, ref: StoredCell) -> tuple[str, str]:
    """How explain's lines name the two sides: by what differs between them."""
    s, r = subject.stack, ref.stack
    if s.tuning != r.tuning:
        return f"with {r.tuning} tuning", f"with {s.tuning}"
    if s.engine != r.engine:
        return "natively", f"in {s.engine.label()}'s {s.placement.kind}"
    beneath = "on the raw device" if r.filesystem.type == "none" else f"on {r.filesystem.label()}"
    return beneath, f"on {s.filesystem.label()}"
