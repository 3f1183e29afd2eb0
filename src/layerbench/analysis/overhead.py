"""Per cell: the headline number, its summary, and its ratio to the baseline."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from layerbench.analysis import precision
from layerbench.analysis.checks import Check, faster_than_baseline, noisy, not_beneath
from layerbench.analysis.stats import Ratio, Summary, cell_values, ratios_of, summaries
from layerbench.spec.models import FioWorkload, IozoneWorkload, Workload
from layerbench.store.db import CheckRow
from layerbench.store.read import RunData, StoredCell


@dataclass(frozen=True)
class CellResult:
    cell_id: str
    stack_label: str
    workload: str
    metric: str  # "iops" for random workloads, "bw" for sequential ones
    summary: Summary
    ratio: Ratio
    is_baseline: bool
    failed: int  # failed trials of this cell
    failure: str | None  # the first failure's category
    flags: tuple[Check, ...] = ()  # checks that flagged this cell (per trial, or across trials)
    physics: Check | None = None  # faster-than-physics whatever it said (a skip says why there is no bound)


# How each headline metric is shown: bandwidth in MiB/s, the others as counted.
UNITS = {"iops": "IOPS", "bw": "MiB/s", "ops": "ops/s", "iozone_geomean": "MiB/s"}
BYTE_METRICS = frozenset({"bw", "iozone_geomean"})  # stored in bytes/s, shown in MiB/s


def headline_metric(workload: Workload) -> str:
    """ops/s for databases (all instances together), personalities and job files; IOPS for random I/O,
    bandwidth for sequential I/O."""
    if isinstance(workload, IozoneWorkload):
        return "iozone_geomean"  # a whole surface: its geometric mean over every point and operation
    if not isinstance(workload, FioWorkload) or workload.personality or workload.job_file:
        return "ops"
    return "iops" if workload.rw.startswith("rand") else "bw"


def of_run(data: RunData) -> list[CellResult]:
    """Every cell's result, its intervals at the confidence its trials rule needs (``precision.confidence``:
    wider where a precision target stopped cells)."""
    level = precision.confidence(data.trials_rule)
    values = {m: cell_values(data.samples, m) if not data.samples.empty else {} for m in UNITS}
    failures: dict[str, list[str]] = {}
    for t in data.trials:
        if t.status != "ok":
            failures.setdefault(t.cell_id, []).append(t.category or "unknown")
    flagged: dict[str, list[CheckRow]] = {}
    for k in data.checks:
        if k.status == "flag":
            flagged.setdefault(k.cell_id, []).append(k)
    run = _Run({c.cell_id: c for c in data.cells}, failures, flagged)
    metrics = [headline_metric(c.cell.workload) for c in data.cells]
    mine = [values[m].get(c.cell_id, NONE) for c, m in zip(data.cells, metrics, strict=True)]
    base = [values[m].get(c.baseline_cell_id or "", NONE) for c, m in zip(data.cells, metrics, strict=True)]
    # All cells' statistics at once: one cell at a time was 1.3 s of a 10,500-cell run's `show`.
    stats = zip(summaries(mine, level), ratios_of(list(zip(mine, base, strict=True)), level), strict=True)
    return [
        _result(c, m, summary, r, len(b), run)
        for c, m, (summary, r), b in zip(data.cells, metrics, stats, base, strict=True)
    ]


NONE = np.array([])  # the values of a cell without successful trials


@dataclass(frozen=True)
class _Run:
    by_id: dict[str, StoredCell]
    failures: dict[str, list[str]]  # per cell, its failed trials' categories
    flagged: dict[str, list[CheckRow]]  # per cell, the checks that flagged its trials


def _result(c: StoredCell, metric: str, summary: Summary, r: Ratio, n_base: int, run: _Run) -> CellResult:
    fails = run.failures.get(c.cell_id, [])
    flags = _trial_flags(run.flagged.get(c.cell_id, [])) + _cross_flags(c, run.by_id, summary, r, n_base, run.failures)
    fast = None
    if c.baseline_cell_id and not c.is_baseline:
        fast = physics(c, run.by_id.get(c.baseline_cell_id), r, (summary.n, n_base))
        flags += [fast] if fast.status == "flag" else []
    first = fails[0] if fails else None
    return CellResult(
        c.cell_id, c.stack_label, c.workload, metric, summary, r, c.is_baseline, len(fails), first, tuple(flags), fast
    )


def _trial_flags(mine: list[CheckRow]) -> list[Check]:
    """Each check that flagged a trial of this cell, once, with its first detail and how many trials it flagged."""
    first: dict[str, CheckRow] = {}
    for k in mine:
        first.setdefault(k.name, k)
    return [
        Check(k.name, "flag", f"{k.detail} (flagged in {_trials(sum(m.name == k.name for m in mine))})")
        for k in first.values()
    ]


def _cross_flags(
    c: StoredCell, by_id: dict[str, StoredCell], summary: Summary, r: Ratio, n_base: int, failures: dict[str, list[str]]
) -> list[Check]:
    flags = []
    n_check = noisy(summary.cv, summary.n)
    if n_check.status == "flag":
        flags.append(n_check)
    if c.is_baseline or not c.baseline_cell_id:
        return flags
    base = by_id.get(c.baseline_cell_id)
    base_label = base.stack_label if base else "the baseline"
    if summary.n and not n_base and failures.get(c.baseline_cell_id):
        flags.append(
            Check(
                "not-comparable", "flag", f"{base_label} has no results: it failed ({failures[c.baseline_cell_id][0]})"
            )
        )
    return flags


def physics(c: StoredCell, base: StoredCell | None, r: Ratio, n: tuple[int, int]) -> Check:
    """``faster-than-physics`` of a cell against its baseline cell."""
    if base is None:
        return Check("faster-than-physics", "skip", "the baseline cell is not in this run")
    bound = not_beneath(c.stack, base.stack)
    touches_device = c.stack.placement.kind != "tmpfs"
    return faster_than_baseline(r.ratio, r.ci_low, n, base.stack_label, touches_device, bound)


def _trials(n: int) -> str:
    return "1 trial" if n == 1 else f"{n} trials"
