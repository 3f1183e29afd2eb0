"""Seed 004's table: for each operation, each layer's ratio to its baseline, one column per layer.

Swept workloads (``read`` over ``size`` x ``bs``) fold into their operation
(``read``) by the geometric mean of their ratios, the mean that treats ×2 and
×0.5 alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from layerbench.analysis.overhead import CellResult
from layerbench.spec.models import StackSpec
from layerbench.store.read import StoredCell
from layerbench.workloads import registry


@dataclass(frozen=True)
class RatioTable:
    rows: list[str]  # operations and personalities
    columns: list[str]  # e.g. "ext4 · docker:overlay2/volume"
    values: dict[tuple[str, str], float]  # geometric mean of the ratios
    points: dict[tuple[str, str], int]  # how many cells each value folds


def ratio_table(
    results: Sequence[CellResult], cells: Sequence[StoredCell], points: pd.DataFrame | None = None
) -> RatioTable:
    """``points``: analysis.surface.iozone_points; an IOzone cell gives a row per operation, folded over its
    surface, instead of one for its geometric-mean headline."""
    by_id = {c.cell_id: c for c in cells}
    folded: dict[tuple[str, str], list[float]] = {}
    for r in results:
        c = by_id[r.cell_id]
        if r.is_baseline or r.ratio.ratio != r.ratio.ratio or registry.of(c.cell.workload).surface:
            continue
        folded.setdefault((c.operation, column(c.stack)), []).append(r.ratio.ratio)
    for row in (points if points is not None else pd.DataFrame()).itertuples(index=False):
        folded.setdefault((row.op, column(by_id[row.cell_id].stack)), []).append(row.ratio)
    rows = list(dict.fromkeys(k[0] for k in folded))
    columns = sorted(dict.fromkeys(k[1] for k in folded))
    values = {k: float(np.exp(np.mean(np.log(v)))) for k, v in folded.items()}
    return RatioTable(rows, columns, values, {k: len(v) for k, v in folded.items()})


def column(stack: StackSpec) -> str:
    """A layer as the table heads it: the filesystem, the engine (and its driver), the placement."""
    return f"{stack.filesystem.type} · {stack.engine.label()}/{stack.placement.kind}"
