"""The same cells across two runs (two hosts, kernels, versions): B relative to A.

Two runs share no rounds, so each cell's ratio is unpaired (Welch's on the logs: the ratio of geometric
means, its interval and p-value from one t statistic), and every cell compared is one family whose verdicts
are corrected together (analysis/verdicts.py), as a run's own are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from layerbench.analysis.overhead import headline_metric
from layerbench.analysis.stats import NAN, LogRatio, Ratio, cell_values, welch_logs_of
from layerbench.analysis.verdicts import judge
from layerbench.store.read import RunData, RunSamples

NONE = np.array([], dtype=float)  # a cell without trials of the metric on one side

# What must match for two runs' numbers to mean the same thing, and why it matters.
ENVIRONMENT_KEYS = {
    "kernel": "the kernel's block layer, filesystems and overlayfs change between versions",
    "cpu_model": "software overheads scale with the CPU",
    "cpus": "the number of cores bounds high-load jobs",
    "memory_bytes": "the page cache and tmpfs depend on memory",
    "fio_sha256": "a different fio binary",
}


@dataclass(frozen=True)
class Comparison:
    cell_id: str
    label: str
    metric: str
    n_a: int
    n_b: int
    ratio: Ratio  # B / A
    verdict: str = ""  # slower | faster | equivalent | undecided, corrected over the cells compared
    note: str = ""  # why there is no interval
    q_value: float = NAN  # p times K/|S| (analysis/verdicts.py): below 5% exactly where the interval excludes ×1


def compare(a: RunData | RunSamples, b: RunData | RunSamples, metric: str | None = None) -> list[Comparison]:
    """B relative to A for every cell both runs have, on each cell's headline metric or on ``metric`` (then
    only the cells that report it, in one job and one direction: a latency summed over several means
    nothing)."""
    in_b = {c.cell_id for c in b.cells}
    streams_a, streams_b = (_streams(r.samples, metric) for r in (a, b)) if metric else ({}, {})
    rows = []
    memo: dict[tuple[int, str], dict[str, np.ndarray]] = {}
    for c in (c for c in a.cells if c.cell_id in in_b):
        if metric is not None and c.cell_id not in streams_a:
            continue
        name = metric or headline_metric(c.cell.workload)
        mine = _values(a, name, memo).get(c.cell_id, NONE)
        theirs = _values(b, name, memo).get(c.cell_id, NONE)
        rows.append((c, name, mine, theirs))
    # Every cell's interval at once (welch_logs_of: the same numbers as one cell at a time), linear in samples.
    welched = welch_logs_of([(theirs, mine) for _, _, mine, theirs in rows])
    compared = [
        LogRatio(0, NAN, NAN, NAN, f"{name} of several jobs or directions: not summed")
        if max(streams_a.get(c.cell_id, 0), streams_b.get(c.cell_id, 0)) > 1
        else w
        for (c, name, _, _), w in zip(rows, welched, strict=True)
    ]
    judged = judge(compared)
    return [
        Comparison(c.cell_id, c.label, name, len(mine), len(theirs), j.ratio, j.verdict, j.note, j.q_value)
        for (c, name, mine, theirs), j in zip(rows, judged, strict=True)
    ]


def _values(
    run: RunData | RunSamples, metric: str, memo: dict[tuple[int, str], dict[str, np.ndarray]]
) -> dict[str, np.ndarray]:
    """Per cell, its trials' values of ``metric``: computed once per run and metric, not once per cell."""
    key = (id(run), metric)
    if key not in memo:
        memo[key] = cell_values(run.samples, metric) if not run.samples.empty else {}
    return memo[key]


def _streams(samples: pd.DataFrame, metric: str) -> dict[str, int]:
    """Per cell reporting ``metric``: how many (job, direction) report it."""
    if samples.empty:
        return {}
    rows = samples.loc[samples["metric"] == metric, ["cell_id", "job", "direction"]].drop_duplicates()
    return {str(k): int(v) for k, v in rows["cell_id"].value_counts().items() if v}  # a category may count 0


def environment_differences(host_a: dict[str, Any], host_b: dict[str, Any]) -> list[str]:
    diffs = []
    for key, why in ENVIRONMENT_KEYS.items():
        if host_a.get(key) != host_b.get(key):
            diffs.append(f"{key}: {host_a.get(key)} vs {host_b.get(key)} ({why})")
    tools_a, tools_b = host_a.get("tools") or {}, host_b.get("tools") or {}
    for tool in sorted(set(tools_a) | set(tools_b)):
        if tools_a.get(tool) != tools_b.get(tool):
            diffs.append(f"{tool}: {tools_a.get(tool)} vs {tools_b.get(tool)}")
    return diffs
