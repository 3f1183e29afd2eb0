"""Latency percentiles per cell from fio's histograms, merged across jobs and trials.

Parsing happens here, at read time, from the raw output the store keeps, so
the percentiles of every old run benefit from whatever this code does better.
"""

from __future__ import annotations

from collections import defaultdict

import pandas as pd

from layerbench.analysis.percentiles import STANDARD, merge, percentiles
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
