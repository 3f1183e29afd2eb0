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

import pandas as pd

from layerbench.analysis import flame
from layerbench.analysis.findings import Finding
from layerbench.analysis.overhead import headline_metric
from layerbench.analysis.stats import per_trial
from layerbench.records.trial import ProfileRecord
from layerbench.spec.engines import DEFAULT_RUNTIME_BINARY
from layerbench.spec.traits import TRAITS
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
    preempted_share: float | None  # seconds its threads waited runnable for a CPU, summed, per second of the span
    preempted_by: dict[str, float]  # who had its CPU then → seconds


@dataclass(frozen=True)
class Pair:
    """A finding whose two cells were both profiled: the differential graph's subject and base."""

    finding: Finding
    subject: str  # cell ids
    reference: str
    growths: list[flame.FrameGrowth]  # per category of kernel work, largest growth first
    lines: list[str]  # flame.explain's lines: what grew or shrank, in plain words; then any wait for a CPU
    why: list[str]  # the few that say why the layer costs more: what grew most, and any wait for a CPU


@dataclass(frozen=True)
class CpuPerIo:
    """What every cell's trials spent of the host's CPU per I/O, from the monitor (no profiler needed):
    the whole host's user and system time over the cell's rate, so daemons working for it count too."""

    cell_id: str
    user_us: float
    system_us: float
    container_cores: float | None  # the container's own cgroup, where the cell has one


def cpu_per_io(data: RunData) -> list[CpuPerIo]:
    """Per cell whose workload counts I/Os (IOPS, ops/s): means over its successful trials."""
    ncpu = float(data.run.host.get("cpus") or 0)
    if data.monitor.empty or data.samples.empty or not ncpu:
        return []
    series = _means(data.monitor, ("cpu.user", "cpu.system", "container.cpu_cores"))
    rates = {m: _rates(data, m) for m in COUNTED}
    out = []
    for c in data.cells:
        metric = headline_metric(c.cell.workload)
        rate = rates[metric].get(c.cell_id) if metric in COUNTED else None
        if not rate or (c.cell_id, "cpu.user") not in series:
            continue
        per_io = 1e6 * ncpu / 100 / rate  # a % of the host, as µs of CPU per I/O
        cores = series.get((c.cell_id, "container.cpu_cores"))
        user, system = series[(c.cell_id, "cpu.user")], series.get((c.cell_id, "cpu.system"), 0.0)
        out.append(CpuPerIo(c.cell_id, user * per_io, system * per_io, cores))
    return out


def _means(monitor: pd.DataFrame, wanted: tuple[str, ...]) -> dict[tuple[str, str], float]:
    """(cell, series) → the mean of its points. Summed in Python, not by a pandas groupby on two string
    keys: that one crashed the interpreter (SIGSEGV in pandas' sorting) in the test VM."""
    rows = monitor[monitor["series"].isin(wanted)]
    sums: dict[tuple[str, str], list[float]] = {}
    columns = (rows[k].tolist() for k in ("cell_id", "series", "value"))
    for cell, name, value in zip(*columns, strict=True):
        acc = sums.setdefault((str(cell), str(name)), [0.0, 0.0])
        acc[0] += value
        acc[1] += 1
    return {key: total / n for key, (total, n) in sums.items()}


def _rates(data: RunData, metric: str) -> dict[str, float]:
    """Each cell's mean rate over its trials."""
    frame = per_trial(data.samples, metric)
    by_cell: dict[str, list[float]] = {}
    for cell, value in zip(frame["cell_id"].tolist(), frame["value"].tolist(), strict=True):
        by_cell.setdefault(str(cell), []).append(value)
    return {cell: sum(vs) / len(vs) for cell, vs in by_cell.items()}


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
        record.counters["preempted_s"] / seconds if "preempted_s" in record.counters and seconds else None,
        preempted_by(record),
    )


def preempted_by(record: ProfileRecord) -> dict[str, float]:
    return {k.split(":", 1)[1]: v for k, v in record.counters.items() if k.startswith("preempted_by:")}


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
    mine = {c.cell_id: c for c in counters(data)}
    io = {c.cell_id: c.ios for c in counters(data)}
    out = []
    done: dict[tuple[str, str], tuple[list[flame.FrameGrowth], list[str], list[str]]] = {}
    for f in findings:
        workload = f.workload.split(" ")[0]  # IOzone's operations are judged as "iozone randread"
        subject, ref = cell.get((f.subject, workload)), cell.get((f.reference, workload))
        if subject is None or ref is None or not {subject.cell_id, ref.cell_id} <= data.profiles.keys():
            continue
        key = (subject.cell_id, ref.cell_id)
        if key not in done:
            done[key] = _compared(data, subject, ref, io, mine)
        out.append(Pair(f, subject.cell_id, ref.cell_id, *done[key]))
    return out


def _compared(
    data: RunData,
    subject: StoredCell,
    ref: StoredCell,
    io: dict[str, int | None],
    mine: dict[str, CellCounters],
) -> tuple[list[flame.FrameGrowth], list[str], list[str]]:
    base, other = profile_of(data.profiles[ref.cell_id]), profile_of(data.profiles[subject.cell_id])
    # Samples per million (I/Os x Hz) are µs of CPU per I/O: the test of the two rates is the same.
    growths = flame.diff_categories(base, other, *_cpu_scaled(data, io, (ref.cell_id, subject.cell_id)))
    names = labels(subject, ref)
    waited = [w] if (w := preemption_line(mine[ref.cell_id], mine[subject.cell_id], names)) else []
    grew = [g for g in growths if g.points > 0]
    lines = [*flame.explain(growths, labels=names, per_io=PER_IO), *waited]
    return growths, lines, [*flame.explain(grew, WHY, names, PER_IO), *waited]


PER_IO = "µs of CPU per I/O"
WHY = 3  # what grew most, as advice quotes it (the report lists every change)
# Waiting runnable for a CPU (summed over the workload's threads, per second of the trial) counts when it is at
# least this and twice what the other side waited: one profiled trial a side, so only a large difference is named.
PREEMPTED_MIN_SHARE = 0.005
PREEMPTED_MIN_FACTOR = 2.0
# The container engines' own processes and their default OCI runtime's, as a CPU profile names them.
ENGINE_PROCESSES = (*(p for t in TRAITS.values() for p in t.processes), DEFAULT_RUNTIME_BINARY)


def preemption_line(base: CellCounters, other: CellCounters, names: tuple[str, str]) -> str | None:
    """What a CPU profile cannot show: the workload ready to run while another process had its CPU."""
    b, o = base.preempted_share, other.preempted_share
    if b is None or o is None or o < PREEMPTED_MIN_SHARE or o < PREEMPTED_MIN_FACTOR * b:
        return None
    top = sorted(other.preempted_by.items(), key=lambda kv: -kv[1])[:3]
    who = ", ".join(f"{comm} {1000 * s:.1f} ms" for comm, s in top)
    text = (
        f"preempted: the workload's threads waited for a CPU they were ready to use {1000 * o:.0f} ms per second "
        f"of the profiled trial {names[1]}, against {1000 * b:.0f} ms {names[0]} (their CPU went to {who})"
    )
    if any(comm.startswith(ENGINE_PROCESSES) for comm, _ in top):
        text += (
            ": the container engine relaying what the workload writes to its output, woken by each write; a short"
            " test interrupted by it pays for it whole, storage has no part in it"
        )
    return text


def _cpu_scaled(data: RunData, io: dict[str, int | None], cells: tuple[str, str]) -> tuple[int | None, int | None]:
    """Each side's I/Os times its sampling rate: samples per million of those are µs of CPU per I/O."""
    scaled = []
    for cell in cells:
        ios, hz = io.get(cell), data.profiles[cell].counters.get("frequency_hz", 0.0)
        scaled.append(int(ios * hz) if ios and hz else None)
    return (scaled[0], scaled[1]) if None not in scaled else (None, None)


def labels(subject: StoredCell, ref: StoredCell) -> tuple[str, str]:
    """How explain's lines name the two sides: by what differs between them."""
    s, r = subject.stack, ref.stack
    if s.tuning != r.tuning:
        return f"with {r.tuning} tuning", f"with {s.tuning}"
    if s.engine != r.engine:
        return "natively", f"in {s.engine.label()}'s {s.placement.kind}"
    beneath = "on the raw device" if r.filesystem.type == "none" else f"on {r.filesystem.label()}"
    return beneath, f"on {s.filesystem.label()}"
