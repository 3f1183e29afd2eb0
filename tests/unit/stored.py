"""Read-model objects for tests of analysis and reports that need no database."""

from __future__ import annotations

from hdrh.histogram import HdrHistogram

from layerbench.records.info import TrialInfo
from layerbench.spec.matrix import SweepPoint
from layerbench.spec.models import Cell
from layerbench.store.read import StoredCell, StoredTrial


def stored_cell(
    cell: Cell, cell_id: str | None = None, baseline: str | None = None, point: SweepPoint | None = None
) -> StoredCell:
    """``cell`` as a loaded run has it; the baseline of itself when ``baseline`` is its own id."""
    cid = cell_id or cell.id
    name = cell.workload.name
    return StoredCell(
        cid, cell.label(), cell.stack.label(), name, cell, baseline == cid, baseline, point or SweepPoint(name, {})
    )


def stored_trial(
    trial_id: int, cell_id: str, info: dict | None = None, latency: dict[str, HdrHistogram] | None = None
) -> StoredTrial:
    """``info``: the trial's conditions as the store keeps them (JSON), decoded as the read model decodes them."""
    return StoredTrial(trial_id, cell_id, 0, "ok", None, "", TrialInfo.from_json(info or {}), latency or {})
