"""IOzone's surfaces against the baseline: per operation, file size and record size, the ratio of means.

One IOzone trial measures a whole surface (seed 004's automatic mode), stored
as one "bw" sample per operation and point (its job from ``sample.point_job``). A
point's ratio is the cell's mean over its trials at that point over the
baseline's mean at the same point; the ratio table folds a surface by the
geometric mean, the figure draws it.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from layerbench.records.sample import job_point
from layerbench.store.read import StoredCell
from layerbench.workloads import registry

COLUMNS = ["cell_id", "op", "size", "record", "ratio"]


def iozone_points(frame: pd.DataFrame, cells: Sequence[StoredCell]) -> pd.DataFrame:
    """Rows of (cell_id, op, size, record, ratio) for every IOzone cell with a baseline; sizes in bytes."""
    pairs = {
        c.cell_id: c.baseline_cell_id
        for c in cells
        if registry.of(c.cell.workload).surface and not c.is_baseline and c.baseline_cell_id
    }
    if frame.empty or not pairs:
        return pd.DataFrame(columns=COLUMNS)
    rows = frame[(frame["metric"] == "bw") & frame["cell_id"].isin({*pairs, *pairs.values()})]
    means = rows.groupby(["cell_id", "direction", "job"])["value"].mean()
    out = []
    for cell, base in pairs.items():
        if cell not in means.index.get_level_values(0) or base not in means.index.get_level_values(0):
            continue
        ratio = (means.loc[cell] / means.loc[base]).dropna()
        for (direction, job), value in ratio.items():
            point = job_point(job)
            if point:
                out.append((cell, f"iozone {direction}", point[0] * 1024, point[1] * 1024, float(value)))
    return pd.DataFrame(out, columns=COLUMNS)
