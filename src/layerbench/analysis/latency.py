"""Latency percentiles per cell from histograms merged across jobs (or clients) and trials.

fio's are read from the raw output the store keeps (the read model parses them
when a run is loaded with its latency), so the percentiles of every old run
benefit from whatever this code does better; database clients' are the
HdrHistograms each trial kept (hdr.py).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import pandas as pd
from hdrh.histogram import HdrHistogram

from layerbench.records import hdr
from layerbench.records.percentiles import STANDARD, sorted_percentiles
from layerbench.store.read import Completion, StoredTrial


def merged_percentiles(completions: Sequence[Completion]) -> pd.DataFrame:
    """One row per (cell_id, direction): n trials, completions counted, and p50…p99.9 in ns."""
    rows = [
        {
            "cell_id": c.cell_id,
            "direction": c.direction,
            "trials": c.trials,
            "completions": int(c.counts.sum()),
            **sorted_percentiles(c.ns, c.counts, STANDARD),
        }
        for c in completions
    ]
    return pd.DataFrame(rows)


# Seed 001 reads p50, p90, p99 and p99.9 (and the maximum); YCSB's own report gives p95.
DB_PERCENTILES = (50.0, 90.0, 95.0, 99.0, 99.9)


def client_percentiles(trials: Sequence[StoredTrial]) -> pd.DataFrame:
    """One row per (cell_id, operation) of database clients: trials, operations, p50…p99.9 and max in
    µs, from each successful trial's histogram of all its instances, merged over the trials."""
    hists: dict[tuple[str, str], list[HdrHistogram]] = defaultdict(list)
    for t in trials:
        for op, histogram in t.client_latency.items():
            hists[(t.cell_id, op)].append(histogram)
    rows = []
    for (cell_id, op), parts in hists.items():
        total = hdr.merged(parts)
        row = {"cell_id": cell_id, "operation": op or "transaction", "trials": len(parts)}
        row["operations"] = int(total.get_total_count())
        row |= {f"p{p:g}": float(hdr.value_at_percentile(total, p)) for p in DB_PERCENTILES}
        row["max"] = float(total.get_max_value())
        rows.append(row)
    return pd.DataFrame(rows)
