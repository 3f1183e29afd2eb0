"""The same cells across two runs (two hosts, kernels, versions): B relative to A."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from layerbench.analysis.overhead import headline_metric
from layerbench.analysis.stats import Ratio, cell_values, ratio
from layerbench.store.read import RunData

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


def compare(a: RunData, b: RunData) -> list[Comparison]:
    """B relative to A for every cell both runs have."""
    in_b = {c.cell_id for c in b.cells}
    out = []
    for c in (c for c in a.cells if c.cell_id in in_b):
        metric = headline_metric(c.cell.workload)
        mine = cell_values(a.samples, metric).get(c.cell_id, []) if not a.samples.empty else []
        theirs = cell_values(b.samples, metric).get(c.cell_id, []) if not b.samples.empty else []
        out.append(Comparison(c.cell_id, c.label, metric, len(mine), len(theirs), ratio(theirs, mine)))
    return out


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
