"""Latency percentiles per cell from histograms merged across jobs (or clients) and trials.

fio's are parsed here, at read time, from the raw output the store keeps, so
the percentiles of every old run benefit from whatever this code does better;
database clients' are the HdrHistograms each trial kept (hdr.py).
"""

from __future__ import annotations

from collections import defaultdict

import pandas as pd

from layerbench import hdr
from layerbench.analysis.percentiles import STANDARD, merge, percentiles
from layerbench.store.db import Store
from layerbench.workloads import fio


def merged_percentiles(raw_outputs: list[tuple[str, int, str]]) -> pd.DataFrame:
    """One row per (cell_id, direction): n trials, completions counted, and p50…p99.9 in ns."""
    bins: dict[tuple[str, str], list[dict[int, int]]] = defaultdict(list)
    trials: dict[tuple[str, str], set[int]] = defaultdict(set)
    for cell_id, trial_id, raw in raw_outputs:
        try:
            result = fio.parse(raw)
        except fio.FioParseError:
            continue  # not fio's output (another tool's trial): no histogram to merge
        for job in result.jobs:
            for direction, d in job.directions.items():
                bins[(cell_id, direction)].append(d.clat_bins)
                trials[(cell_id, direction)].add(trial_id)
    rows = []
    for (cell_id, direction), hists in bins.items():
        merged = merge(hists)
        rows.append(
            {
                "cell_id": cell_id,
                "direction": direction,
                "trials": len(trials[(cell_id, direction)]),
                "completions": sum(merged.values()),
                **percentiles(merged, STANDARD),
            }
        )
    return pd.DataFrame(rows)


DB_PERCENTILES = (50.0, 95.0, 99.0, 99.9)


def client_percentiles(infos: dict[int, dict], trial_cells: dict[int, str]) -> pd.DataFrame:
    """One row per (cell_id, operation) of database clients: trials, operations, p50…p99.9 in µs.

    ``infos`` are the trials' recorded info (``latency_hdr``: operation → encoded histogram of all
    instances), ``trial_cells`` trial id → cell id for the successful trials.
    """
    hists: dict[tuple[str, str], list] = defaultdict(list)
    for trial_id, cell_id in trial_cells.items():
        for op, encoded in (infos.get(trial_id, {}).get("latency_hdr") or {}).items():
            hists[(cell_id, op)].append(hdr.decode(encoded))
    rows = []
    for (cell_id, op), parts in hists.items():
        total = hdr.merged(parts)
        row = {"cell_id": cell_id, "operation": op or "transaction", "trials": len(parts)}
        row["operations"] = int(total.get_total_count())
        row |= {f"p{p:g}": float(hdr.value_at_percentile(total, p)) for p in DB_PERCENTILES}
        rows.append(row)
    return pd.DataFrame(rows)


def client_percentiles_of_run(store: Store, run_id: str) -> pd.DataFrame:
    ok = {t.id: t.cell_id for t in store.trials(run_id) if t.status == "ok"}
    return client_percentiles(store.trial_infos(run_id), ok)
