"""Many fio clients (spec/clients.py) per cell: each client's mean IOPS and bandwidth over the cell's trials,
their total, and how far apart they started and finished."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pandas as pd

from layerbench.store.read import StoredCell

CLIENT_JOB = re.compile(r"c(\d+)")
COLUMNS = [
    "cell_id", "stack", "workload", "client", "trials", "iops", "bw_bytes", "start_spread_ms", "finish_spread_ms",
]


def per_client(cells: Sequence[StoredCell], samples: pd.DataFrame) -> pd.DataFrame:
    """One row per (cell with clients, client "c0", "c1", ...) and one per cell's total ("all"): mean IOPS and
    bandwidth (B/s) per trial, summed over directions; the total's rows carry the mean spreads (ms)."""
    mine = {c.cell_id: c for c in cells if c.stack.clients is not None}
    if not mine or samples.empty:
        return pd.DataFrame(columns=COLUMNS)
    rows = samples[samples["cell_id"].isin(list(mine))]
    out = []
    by_cell = dict(iter(rows.groupby("cell_id", observed=True)))
    for cell_id, c in mine.items():  # in the run's order of cells
        if cell_id not in by_cell:
            continue  # no successful trial
        cell_rows = by_cell[cell_id]
        per_trial = cell_rows.groupby(["trial_id", "job", "metric"], observed=True)["value"].sum().reset_index()
        trials = per_trial["trial_id"].nunique()
        jobs = sorted({str(j) for j in per_trial["job"] if CLIENT_JOB.fullmatch(str(j))}, key=lambda j: int(j[1:]))

        def mean(metric: str, job: str | None = None, frame: pd.DataFrame = per_trial) -> float:
            picked = frame[frame["metric"] == metric]
            if job is not None:
                picked = picked[picked["job"] == job]
            return float(picked.groupby("trial_id")["value"].sum().mean()) if not picked.empty else float("nan")

        base = {"cell_id": str(cell_id), "stack": c.stack_label, "workload": c.workload, "trials": trials}
        for j in jobs:
            out.append(base | {"client": j, "iops": mean("iops", j), "bw_bytes": mean("bw", j)})
        clients = per_trial[per_trial["job"].isin(jobs)]
        out.append(
            base
            | {
                "client": "all",
                "iops": mean("iops", frame=clients),
                "bw_bytes": mean("bw", frame=clients),
                "start_spread_ms": mean("start_spread_ms", "all"),
                "finish_spread_ms": mean("finish_spread_ms", "all"),
            }
        )
    return pd.DataFrame(out, columns=COLUMNS)
