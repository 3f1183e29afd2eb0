"""Per cell: the headline number, its summary, and its ratio to the baseline."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd

from layerbench.analysis.stats import Ratio, Summary, cell_values, ratio, summarize


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


def headline_metric(config_json: str) -> str:
    workload = json.loads(config_json)["workload"]
    return "iops" if str(workload.get("rw", "")).startswith("rand") else "bw"


def results(frame: pd.DataFrame, cells: list, trials: list) -> list[CellResult]:
    """``cells`` are store CellRows, ``trials`` store TrialRows (for failures)."""
    values = {m: cell_values(frame, m) for m in ("iops", "bw")} if not frame.empty else {"iops": {}, "bw": {}}
    failures: dict[str, list[str]] = {}
    for t in trials:
        if t.status != "ok":
            failures.setdefault(t.cell_id, []).append(t.category or "unknown")
    out = []
    for c in cells:
        metric = headline_metric(c.config_json)
        mine = values[metric].get(c.cell_id, [])
        base = values[metric].get(c.baseline_cell_id, []) if c.baseline_cell_id else []
        fails = failures.get(c.cell_id, [])
        out.append(
            CellResult(
                c.cell_id,
                c.stack_label,
                c.workload,
                metric,
                summarize(mine),
                ratio(mine, base),
                c.is_baseline,
                len(fails),
                fails[0] if fails else None,
            )
        )
    return out
