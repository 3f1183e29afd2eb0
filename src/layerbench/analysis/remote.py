"""What a remote device adds to each I/O at low load, split as seed 000's Fig. 4 splits it: submission
(slat, the kernel taking the request) and completion (clat, the device, here also the network and the
client), per remote cell against its local twin (its baseline: the same stack on the local device).

Only cells at queue depth 1 with one job qualify: under load, queueing hides the network's share.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from layerbench.store.read import RunData, StoredCell
from layerbench.workloads import registry

KINDS = ("slat", "clat", "lat")


@dataclass(frozen=True)
class AddedLatency:
    cell_id: str
    stack_label: str
    baseline_label: str
    workload: str
    direction: str  # "read" or "write"
    local_us: dict[str, float]  # slat, clat, lat: mean over trials of each trial's mean (NaN: not measured)
    remote_us: dict[str, float]

    def added_us(self, kind: str) -> float:
        return self.remote_us[kind] - self.local_us[kind]

    def clat_share(self) -> float:
        """How much of the added latency is completion latency (the rest is submission)."""
        total = self.added_us("lat")
        return self.added_us("clat") / total if total else math.nan


def of_run(data: RunData) -> list[AddedLatency]:
    by_id = {c.cell_id: c for c in data.cells}
    out = []
    for c in data.cells:
        base = by_id.get(c.baseline_cell_id or "")
        direction = _low_load_direction(c)
        if base is None or direction is None or c.stack.device.remote is None or base.stack.device.remote:
            continue
        local, remote = _means(data.samples, base.cell_id, direction), _means(data.samples, c.cell_id, direction)
        if math.isnan(local["lat"]) or math.isnan(remote["lat"]):
            continue  # a side with no successful trial
        out.append(AddedLatency(c.cell_id, c.stack_label, base.stack_label, c.workload, direction, local, remote))
    return out


def _low_load_direction(c: StoredCell) -> str | None:
    w = c.cell.workload
    return registry.of(w).qd1_direction(w)


def _means(samples: pd.DataFrame, cell_id: str, direction: str) -> dict[str, float]:
    mine = samples[(samples["cell_id"] == cell_id) & (samples["direction"] == direction)] if len(samples) else samples
    out = {}
    for kind in KINDS:
        rows = mine[mine["metric"] == f"{kind}_mean"] if len(mine) else mine
        out[kind] = float(rows["value"].mean()) / 1000 if len(rows) else math.nan
    return out
