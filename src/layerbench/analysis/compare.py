"""The same cells across two runs (two hosts, kernels, versions): B relative to A.

Two runs share no rounds, so each cell's ratio is unpaired (Welch's on the logs: the ratio of geometric
means, its interval and p-value from one t statistic), and every cell compared is one family whose verdicts
are corrected together (analysis/verdicts.py), as a run's own are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from layerbench.analysis.overhead import headline_metric
from layerbench.analysis.stats import Ratio, cell_values, welch_logs
from layerbench.analysis.verdicts import judge
from layerbench.store.read import RunData, RunSamples

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


def compare(a: RunData | RunSamples, b: RunData | RunSamples) -> list[Comparison]:
    """B relative to A for every cell both runs have."""
    in_b = {c.cell_id for c in b.cells}
    shared = [(c, headline_metric(c.cell.workload)) for c in a.cells if c.cell_id in in_b]
    # Each run's values of a metric split by cell once, not once per cell (that was cells x samples).
    values_a = {m: _cell_values(a, m) for m in {m for _, m in shared}}
    values_b = {m: _cell_values(b, m) for m in values_a}
    rows = []
    for c, metric in shared:
        mine, theirs = values_a[metric].get(c.cell_id, []), values_b[metric].get(c.cell_id, [])
        rows.append((c, metric, len(mine), len(theirs), welch_logs(theirs, mine)))
    judged = judge([r[-1] for r in rows])
    return [
        Comparison(c.cell_id, c.label, metric, n_a, n_b, j.ratio, j.verdict, j.note)
        for (c, metric, n_a, n_b, _), j in zip(rows, judged, strict=True)
    ]


def _cell_values(data: RunData | RunSamples, metric: str) -> dict[str, np.ndarray]:
    return cell_values(data.samples, metric) if not data.samples.empty else {}


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
