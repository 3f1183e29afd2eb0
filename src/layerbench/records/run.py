"""What a run is, as the run stage registers it and the store keeps it: the run's row, each cell's row."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CellRow:
    cell_id: str
    label: str
    stack_label: str
    workload: str
    config_json: str
    is_baseline: bool
    baseline_cell_id: str | None


@dataclass(frozen=True)
class RunRow:
    id: str
    name: str
    started_at: float
    finished_at: float | None
    status: str
    spec: dict[str, Any]  # the experiment as it ran (JSON: a later layerbench may no longer validate it)
    spec_digest: str
    host: dict[str, Any]
    pid: int
