"""What `show`, `report` and `compare` present of a run, computed once from its read model.

The CLI asks this module, not the analysis modules one by one: a run's
results, scaling curves, seed 004's ratio table, a remote device's added latency, the limits its cgroups read
back, and its latency percentiles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from layerbench.analysis import advice, clients, comparisons, decisions, explain, findings, overhead, remote, scaling
from layerbench.analysis.advice import Advised
from layerbench.analysis.compare import Comparison, compare, environment_differences
from layerbench.analysis.decisions import Decisions
from layerbench.analysis.explain import CellCounters, CpuPerIo, Pair
from layerbench.analysis.findings import Finding
from layerbench.analysis.gates import Breach, breaches
from layerbench.analysis.gates import Gate as Gate  # re-exported: the CLI's door to the gates
from layerbench.analysis.gates import check_amount as check_amount
from layerbench.analysis.latency import client_percentiles, merged_percentiles
from layerbench.analysis.overhead import CellResult
from layerbench.analysis.ratio_table import RatioTable, ratio_table
from layerbench.analysis.remote import AddedLatency
from layerbench.analysis.scaling import Scaling
from layerbench.analysis.surface import iozone_points
from layerbench.records.info import GivenOption
from layerbench.store import cache
from layerbench.store.db import CheckRow, Store
from layerbench.store.read import RunData, RunSamples, StoredCell, StoredTrial, load, run_parts

OPEN_SHOWN = 5  # open comparisons a run's summary lists, nearest to being decided first


@dataclass(frozen=True)
class CellOptions:
    """A job file's cell: the options its workload gave fio (``size:``, ``runtime_s:`` ..., and the placement)
    and which jobs took each and which kept the file's own, as its trials recorded them (``info.job_options``)."""

    cell_id: str
    label: str
    options: tuple[GivenOption, ...]


@dataclass(frozen=True)
class TrialState:
    """A trial on a cluster layerbench built: what state it ran in (its note, ``degraded: 11/33 PGs degraded,
    2/3 OSDs up``), what a verify workload's read-back said, and the settings check's verdict."""

    cell_id: str
    label: str
    repetition: int
    status: str
    note: str
    verified: str | None


@dataclass(frozen=True)
class RunView:
    data: RunData
    results: list[CellResult]
    scalings: list[Scaling]
    points: pd.DataFrame  # IOzone's surfaces against the baseline (analysis.surface)
    ratios: RatioTable | None  # seed 004's table, for runs whose baseline is native on each filesystem
    limits: list[dict[str, str]]  # per cell with limits, what its cgroup read back
    client_latency: pd.DataFrame  # analysis.latency.client_percentiles: database clients' histograms merged
    fio_latency: pd.DataFrame | None  # analysis.latency.merged_percentiles; None unless loaded with latency
    remote_latency: list[AddedLatency]  # per remote cell at QD1: what the network path adds (seed 000's Fig. 4)
    findings: list[Finding]  # each layer against the one beneath it, paired by round
    advice: Advised  # what to do about the findings, with their evidence (`advise`)
    profiled: list[Pair]  # findings whose two cells were profiled: what grew between them
    counters: list[CellCounters]  # per profiled cell: CPU, system calls and switches per I/O
    cpu_per_io: list[CpuPerIo]  # per cell counting I/Os: the host's CPU per I/O, from the monitor
    # analysis.clients.per_client: each fio client's IOPS and bandwidth per cell with clients, and their total
    clients: pd.DataFrame = field(default_factory=pd.DataFrame)
    # a budget run's comparisons: how many are decided, and what would decide each open one (analysis/decisions.py)
    decided: Decisions | None = None
    # each job file's cell: what its workload gave fio and whom each option reached, once per cell
    job_options: list[CellOptions] = field(default_factory=list)
    # each trial on a cluster layerbench built: the cluster's state as it began (records ClusterInfo)
    cluster_states: list[TrialState] = field(default_factory=list)

    @property
    def finding_lines(self) -> list[str]:
        return findings.summary_lines(self.findings) + self.open_lines

    @property
    def open_lines(self) -> list[str]:
        """A budget run's open comparisons, those nearest to being decided first, each with what would decide
        it (at most OPEN_SHOWN: `show --json` lists them all); a fixed run's in one line (`advise` says each)."""
        if self.decided is None:
            return []
        if not self.data.trials_rule.sequential:
            return [self.decided.summary()] if self.decided.open else []
        labels = {c.cell_id: c.stack_label for c in self.data.cells}
        bound = cpu_bound(self.results)
        head = f"decided {self.decided.decided} of {self.decided.total} comparisons"
        nearest = sorted(self.decided.open, key=lambda o: (o.seconds is None, o.seconds or 0.0))
        lines = [f"{head}{'; open, nearest first:' if nearest else ''}"] + [
            f"  {labels.get(o.subject, o.subject)} vs {labels.get(o.reference, o.reference)} on {o.metric}: "
            + o.advice(cpu_bound=bool({o.subject, o.reference} & bound))
            for o in nearest[:OPEN_SHOWN]
        ]
        more = len(nearest) - OPEN_SHOWN
        return lines + ([f"  ... {more} more (show --json lists each, as decisions.open)"] if more > 0 else [])


def view(data: RunData) -> RunView:
    family = comparisons.of_run(data)  # every comparison the run prints, judged once, together
    results = overhead.of_run(data, family)
    points = iozone_points(data.samples, data.cells)
    table = ratio_table(results, data.cells, points) if data.per_filesystem else None
    labels = {c.cell_id: c.stack_label for c in data.cells}
    fio = merged_percentiles(data.completions) if data.completions is not None else None
    found = findings.of_run(data, results, family)
    profiled = explain.pairs(data, found)
    stacks = {c.stack_label: c.stack for c in data.cells}
    decided = decisions.of_run(data, family) if family.judged else None
    workloads = {c.workload: c.cell.workload for c in data.cells}
    evidence = advice.Evidence(found, stacks, results, profiled, workloads, deciding(data, results, decided))
    return RunView(
        data,
        results,
        scaling.of_run(data),
        points,
        table if table is not None and table.rows else None,
        limits_read_back(data.checks, labels),
        client_percentiles(data.trials),
        fio,
        remote.of_run(data),
        found,
        advice.advise(evidence),
        profiled,
        explain.counters(data),
        explain.cpu_per_io(data),
        clients=clients.per_client(data.cells, data.samples),
        decided=decided,
        job_options=job_options(data.trials, data.cells),
        cluster_states=cluster_states(data.trials, data.cells),
    )


def cpu_bound(results: Sequence[CellResult]) -> set[str]:
    """The cells `bottleneck` flagged: an open comparison of theirs says the CPU was the limit."""
    return {r.cell_id for r in results if any(f.name == findings.CPU_BOUND for f in r.flags)}


def deciding(
    data: RunData, results: Sequence[CellResult], decided: Decisions | None
) -> dict[tuple[str, str, str], str]:
    """What would decide each open comparison, by its cells' stack labels and workload (as findings name it)."""
    if decided is None:
        return {}
    cells = {c.cell_id: c for c in data.cells}
    bound = cpu_bound(results)
    return {
        (cells[o.subject].stack_label, cells[o.reference].stack_label, cells[o.subject].workload): o.advice(
            cpu_bound=bool({o.subject, o.reference} & bound)
        )
        for o in decided.open
        if o.subject in cells and o.reference in cells
    }


def cluster_states(trials: Sequence[StoredTrial], cells: Sequence[StoredCell]) -> list[TrialState]:
    """Each trial's cluster state as it began, in the cells' order, where its trials recorded one."""
    labels = {c.cell_id: c.label for c in cells}
    order = {c.cell_id: i for i, c in enumerate(cells)}
    out = []
    for t in trials:
        if isinstance(t.recorded, str) and '"cluster"' not in t.recorded:
            continue  # most trials ran on no cluster: their conditions need no decoding
        info = t.info.cluster
        if info is not None:
            note = info.note()
            out.append(TrialState(t.cell_id, labels.get(t.cell_id, t.cell_id), t.repetition, t.status, note,
                                  info.verified_after))  # fmt: skip
    return sorted(out, key=lambda s: (order.get(s.cell_id, 0), s.repetition))


def job_options(trials: Sequence[StoredTrial], cells: Sequence[StoredCell]) -> list[CellOptions]:
    """Per job file's cell, the options its trials were given, once: every trial of a cell records the same
    unless a resumed run's placement moved, and then each different one is listed."""
    per_cell: dict[str, list[GivenOption]] = {}
    for t in trials:
        if isinstance(t.recorded, str) and '"job_options"' not in t.recorded:
            continue  # decoding every trial's conditions to find none: a second per 84,000 trials
        kept = per_cell.setdefault(t.cell_id, [])
        kept += [o for o in t.info.job_options or () if o not in kept]
    return [CellOptions(c.cell_id, c.label, tuple(per_cell[c.cell_id])) for c in cells if per_cell.get(c.cell_id)]


def limits_read_back(checks: Sequence[CheckRow], labels: dict[str, str]) -> list[dict[str, str]]:
    """Per cell with limits, what its container's cgroup said (the limit-applied check of its last trial)."""
    last: dict[str, CheckRow] = {}
    for k in checks:
        if k.name == "limit-applied" and (k.cell_id not in last or k.repetition >= last[k.cell_id].repetition):
            last[k.cell_id] = k
    return [
        {"cell": labels.get(k.cell_id, k.cell_id), "status": k.status, "detail": k.detail}
        for _, k in sorted(last.items())
    ]


@dataclass(frozen=True)
class RunComparison:
    a: str  # run ids
    b: str
    cells: list[Comparison]  # B / A per cell both have
    environment_differences: list[str]  # what makes their numbers mean different things


def comparison(a: RunData | RunSamples, b: RunData | RunSamples, metric: str | None = None) -> RunComparison:
    """B / A per cell both runs have, on each cell's headline metric or on ``metric``."""
    return RunComparison(a.run.id, b.run.id, compare(a, b, metric), environment_differences(a.run.host, b.run.host))


def gated(c: RunComparison, gate: Gate) -> list[Breach]:
    """The comparisons worse than ``gate`` allows (analysis/gates.py: read from their verdicts)."""
    return breaches(c.cells, gate)


def cached_view(store: Store, run_ref: str, latency: bool = False, profiles: bool = False) -> RunView:
    """``view(load(store, run_ref, latency, profiles))``, computed once per finished run and layerbench's code
    and then read back from the run's cache (store/cache.py: 1.5 s of reading and 2 s of analysis of a
    10,500-cell run become a few tenths)."""
    run_id = store.resolve_run(run_ref)
    part = "view" + ("_latency" if latency else "") + ("_profiles" if profiles else "")

    def build(frames: dict[str, Any]) -> RunView:
        return view(load(store, run_id, latency, profiles, frames))

    # The samples and monitor frames are the cache's own columns; its cells, trials, checks and timelines are
    # read again when first used (show and the report rarely do: the report's figures are cached too).
    deferred = frozenset({"cells", "trials", "checks", "timelines"})
    return cache.computed(store, run_id, part, build, run_parts(store, run_id, latency), deferred)
