"""Per cell: the headline number, its summary, and its ratio to the baseline."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd

from layerbench.analysis import precision
from layerbench.analysis.checks import Check, faster_than_baseline, noisy, not_beneath
from layerbench.analysis.stats import Ratio, Summary, cell_values, ratio, summarize
from layerbench.spec.models import StackSpec
from layerbench.store.db import Store


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


def headline_metric(config_json: str) -> str:
    """ops/s for databases (all instances together), personalities and job files; IOPS for random I/O,
    bandwidth for sequential I/O."""
    workload = json.loads(config_json)["workload"]
    if workload.get("kind") == "iozone":
        return "iozone_geomean"  # a whole surface: its geometric mean over every point and operation
    if workload.get("kind", "fio") != "fio" or workload.get("personality") or workload.get("job_file"):
        return "ops"
    return "iops" if str(workload.get("rw", "")).startswith("rand") else "bw"


def of_run(store: Store, run_id: str) -> list[CellResult]:
    """``results`` of a stored run, its intervals at the confidence its trials rule needs."""
    s = store
    level = precision.of_spec(s.run(run_id).spec_json)
    return results(s.samples_frame(run_id), s.cells(run_id), s.trials(run_id), s.checks(run_id), level)


def results(
    frame: pd.DataFrame, cells: list, trials: list, checks: pd.DataFrame | None = None, confidence: float = 0.95
) -> list[CellResult]:
    """``cells`` are store CellRows, ``trials`` store TrialRows, ``checks`` the store's per-trial checks;
    ``confidence`` of the intervals (``precision.confidence``: wider where a precision target stopped cells)."""
    values = {m: cell_values(frame, m) if not frame.empty else {} for m in UNITS}
    failures: dict[str, list[str]] = {}
    for t in trials:
        if t.status != "ok":
            failures.setdefault(t.cell_id, []).append(t.category or "unknown")
    by_id = {c.cell_id: c for c in cells}
    out = []
    for c in cells:
        metric = headline_metric(c.config_json)
        mine = values[metric].get(c.cell_id, [])
        base = values[metric].get(c.baseline_cell_id, []) if c.baseline_cell_id else []
        fails = failures.get(c.cell_id, [])
        summary, r = summarize(mine, confidence), ratio(mine, base, confidence)
        flags = _trial_flags(checks, c.cell_id) + _cross_flags(c, by_id, summary, r, len(base), failures)
        fast = None
        if c.baseline_cell_id and not c.is_baseline:
            fast = physics(c, by_id.get(c.baseline_cell_id), r, (summary.n, len(base)))
            flags += [fast] if fast.status == "flag" else []
        out.append(
            CellResult(
                c.cell_id,
                c.stack_label,
                c.workload,
                metric,
                summary,
                r,
                c.is_baseline,
                len(fails),
                fails[0] if fails else None,
                tuple(flags),
                fast,
            )
        )
    return out


def _trial_flags(checks: pd.DataFrame | None, cell_id: str) -> list[Check]:
    if checks is None or checks.empty:
        return []
    mine = checks[(checks["cell_id"] == cell_id) & (checks["status"] == "flag")]
    first = mine.drop_duplicates("name")
    return [
        Check(row.name, "flag", f"{row.detail} (flagged in {_trials((mine['name'] == row.name).sum())})")
        for row in first.itertuples(index=False)
    ]


def _cross_flags(c, by_id: dict, summary: Summary, r: Ratio, n_base: int, failures: dict) -> list[Check]:
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


def physics(c, base, r: Ratio, n: tuple[int, int]) -> Check:
    """``faster-than-physics`` of a store cell against its baseline cell (CellRows)."""
    stack = StackSpec.model_validate(json.loads(c.config_json)["stack"])
    if base is None:
        return Check("faster-than-physics", "skip", "the baseline cell is not in this run")
    bound = not_beneath(stack, StackSpec.model_validate(json.loads(base.config_json)["stack"]))
    touches_device = stack.placement.kind != "tmpfs"
    return faster_than_baseline(r.ratio, r.ci_low, n, base.stack_label, touches_device, bound)


def _trials(n: int) -> str:
    return "1 trial" if n == 1 else f"{n} trials"
