"""Per cell: the headline number, its summary, and its ratio to the baseline.

The ratio is the run's one comparison of that pair (analysis/comparisons.py): paired by round, judged
with all the run's other comparisons at once, the same interval and verdict a finding of the same pair
shows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from layerbench.analysis import comparisons, precision
from layerbench.analysis.checks import faster_than_baseline, noisy, not_beneath
from layerbench.analysis.comparisons import Family, headline_metric
from layerbench.analysis.stats import NAN, Ratio, Summary, cell_values, summaries
from layerbench.analysis.verdicts import Judged
from layerbench.records.checks import Check
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
    verdict: str = ""  # of the ratio (analysis/verdicts.py); "" for the baseline and cells without one
    ratio_note: str = ""  # why the ratio has no interval, or that it is unpaired


# How each headline metric is shown: bandwidth in MiB/s, the others as counted.
UNITS = {"iops": "IOPS", "bw": "MiB/s", "ops": "ops/s", "iozone_geomean": "MiB/s"}
BYTE_METRICS = frozenset({"bw", "iozone_geomean"})  # stored in bytes/s, shown in MiB/s


def of_run(data: RunData, family: Family | None = None) -> list[CellResult]:
    """Every cell's result, its intervals at the run's confidence (each a confidence sequence where the data
    decided when the cell stopped: ``Trials.sequential``); ``family``: the run's comparisons, judged once
    (``comparisons.of_run``), computed here unless given."""
    level = precision.confidence(data.trials_rule)
    family = family or comparisons.of_run(data)
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
    # All cells' summaries at once: one cell at a time was 1.3 s of a 10,500-cell run's `show`.
    judged = [
        family.judged.get((c.cell_id, c.baseline_cell_id or "", m)) for c, m in zip(data.cells, metrics, strict=True)
    ]
    summed = summaries(mine, level, data.trials_rule.sequential)
    return [
        _result(c, m, summary, j, b, run)
        for c, m, summary, j, b in zip(data.cells, metrics, summed, judged, base, strict=True)
    ]


NONE = np.array([])  # the values of a cell without successful trials


@dataclass(frozen=True)
class _Run:
    by_id: dict[str, StoredCell]
    failures: dict[str, list[str]]  # per cell, its failed trials' categories
    flagged: dict[str, list[CheckRow]]  # per cell, the checks that flagged its trials


def _result(c: StoredCell, metric: str, summary: Summary, j: Judged | None, base: np.ndarray, run: _Run) -> CellResult:
    fails = run.failures.get(c.cell_id, [])
    r = j.ratio if j is not None else UNJUDGED
    flags = _trial_flags(run.flagged.get(c.cell_id, [])) + _cross_flags(c, run.by_id, summary, len(base), run.failures)
    fast = None
    if c.baseline_cell_id and not c.is_baseline:
        fast = physics(c, run.by_id.get(c.baseline_cell_id), r, (summary.n, len(base)), _best(base, summary))
        flags += [fast] if fast.status == "flag" else []
    first = fails[0] if fails else None
    verdict, note = (j.verdict, j.note or ("" if j.paired else "unpaired: the rounds do not pair")) if j else ("", "")
    return CellResult(
        c.cell_id,
        c.stack_label,
        c.workload,
        metric,
        summary,
        r,
        c.is_baseline,
        len(fails),
        first,
        tuple(flags),
        fast,
        verdict,
        note,
    )


UNJUDGED = Ratio(NAN, NAN, NAN, NAN)


def _best(base: np.ndarray, summary: Summary) -> tuple[float, float]:
    """The cell's mean against the best trial its baseline had: (the cell's mean / that best, the best)."""
    if not len(base) or not summary.n or float(np.max(base)) <= 0:
        return NAN, NAN
    best = float(np.max(base))
    return summary.mean / best, best


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
    c: StoredCell, by_id: dict[str, StoredCell], summary: Summary, n_base: int, failures: dict[str, list[str]]
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


def physics(
    c: StoredCell, base: StoredCell | None, r: Ratio, n: tuple[int, int], best: tuple[float, float] = (NAN, NAN)
) -> Check:
    """``faster-than-physics`` of a cell against its baseline cell; ``best``: the cell's mean over the best
    trial its baseline had in this run (``_best``)."""
    if base is None:
        return Check("faster-than-physics", "skip", "the baseline cell is not in this run")
    bound = not_beneath(c.stack, base.stack)
    touches_device = c.stack.placement.kind != "tmpfs"
    return faster_than_baseline(r.ratio, r.ci_low, n, base.stack_label, touches_device, bound, best[0])


def _trials(n: int) -> str:
    return "1 trial" if n == 1 else f"{n} trials"
