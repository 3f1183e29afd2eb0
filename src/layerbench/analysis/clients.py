"""Many clients (spec/clients.py) per cell: each client's mean throughput over the cell's trials (fio's IOPS and
bandwidth; a database client's ops/s), each database instance's (its clients' sum), the cell's total, and how
far apart the clients started and finished."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pandas as pd

from layerbench.store.read import StoredCell

CLIENT_JOB = re.compile(r"(?:i(\d+))?c(\d+)")  # fio's "c0"; a database's "i0c1" (run/kinds/database_clients.py)
COLUMNS = [
    "cell_id", "stack", "workload", "client", "node", "trials", "iops", "bw_bytes", "ops", "start_spread_ms",
    "finish_spread_ms",
]  # fmt: skip


def per_client(cells: Sequence[StoredCell], samples: pd.DataFrame) -> pd.DataFrame:
    """One row per (cell with clients, client "c0", "c1", ... or "i0c0", "i0c1", ...), one per database instance
    ("i0": its clients summed) where a cell has several, and one per cell's total ("all"): mean IOPS and bandwidth
    (B/s) or ops/s per trial, summed over directions; the total's rows carry the mean spreads (ms). A fio client
    dealt to a node of its own (``clients.nodes``) names it; else ``node`` is empty."""
    mine = {c.cell_id: c for c in cells if c.stack.clients is not None}
    if not mine or samples.empty:
        return pd.DataFrame(columns=COLUMNS)
    rows = samples[samples["cell_id"].isin(list(mine))]
    out = []
    by_cell = dict(iter(rows.groupby("cell_id", observed=True)))
    for cell_id, c in mine.items():  # in the run's order of cells
        if cell_id in by_cell:  # else no successful trial
            base = {"cell_id": str(cell_id), "stack": c.stack_label, "workload": c.workload, "node": ""}
            out += [_with_node(r, c) for r in _cell_rows(by_cell[cell_id], base)]
    return pd.DataFrame(out, columns=COLUMNS)


def _cell_rows(cell_rows: pd.DataFrame, base: dict[str, Any]) -> list[dict[str, Any]]:
    # A job file's samples are each client's each job ("c0/SECTION"): a client's row sums its jobs.
    client = cell_rows["job"].astype(str).str.split("/", n=1).str[0]
    per_trial = (
        cell_rows.assign(job=client).groupby(["trial_id", "job", "metric"], observed=True)["value"].sum().reset_index()
    )
    base = base | {"trials": per_trial["trial_id"].nunique()}
    jobs = sorted({str(j) for j in per_trial["job"] if CLIENT_JOB.fullmatch(str(j))}, key=_order)

    def mean(metric: str, picked: Sequence[str]) -> float:
        rows = per_trial[(per_trial["metric"] == metric) & per_trial["job"].isin(list(picked))]
        return float(rows.groupby("trial_id")["value"].sum().mean()) if not rows.empty else float("nan")

    def row(name: str, picked: Sequence[str]) -> dict[str, Any]:
        throughput = {"iops": mean("iops", picked), "bw_bytes": mean("bw", picked), "ops": mean("ops", picked)}
        return base | {"client": name} | throughput

    out = []
    instances = sorted({i for j in jobs if (i := _instance(j)) is not None})
    for j in jobs:
        out.append(row(j, [j]))
        last = j == jobs[-1] or _instance(jobs[jobs.index(j) + 1]) != _instance(j)
        if len(instances) > 1 and last:
            i = _instance(j)
            out.append(row(f"i{i}", [k for k in jobs if _instance(k) == i]))
    spreads = {key: mean(key, ["all"]) for key in ("start_spread_ms", "finish_spread_ms")}
    return [*out, row("all", jobs) | spreads] if jobs else out


def _with_node(row: dict[str, Any], cell: StoredCell) -> dict[str, Any]:
    spec, found = cell.stack.clients, CLIENT_JOB.fullmatch(row["client"])
    if spec is None or not spec.nodes or found is None or found[1] is not None:
        return row
    return row | {"node": spec.node_of(int(found[2]), cell.stack.engine.node)}


def _instance(job: str) -> int | None:
    found = CLIENT_JOB.fullmatch(job)
    return int(found[1]) if found and found[1] is not None else None


def _order(job: str) -> tuple[int, int]:
    found = CLIENT_JOB.fullmatch(job)
    assert found is not None
    return int(found[1] or 0), int(found[2])
