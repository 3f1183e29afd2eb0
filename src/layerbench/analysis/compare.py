"""The same cells across two runs (two hosts, kernels, versions): B relative to A."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from layerbench.analysis.overhead import headline_metric
from layerbench.analysis.stats import Ratio, cell_values, ratio

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


def compare(frame_a: pd.DataFrame, frame_b: pd.DataFrame, cells_a: list, cells_b: list) -> list[Comparison]:
    common = [c for c in cells_a if c.cell_id in {b.cell_id for b in cells_b}]
    out = []
    for c in common:
        metric = headline_metric(c.config_json)
        a = cell_values(frame_a, metric).get(c.cell_id, []) if not frame_a.empty else []
        b = cell_values(frame_b, metric).get(c.cell_id, []) if not frame_b.empty else []
        out.append(Comparison(c.cell_id, c.label, metric, len(a), len(b), ratio(b, a)))
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
