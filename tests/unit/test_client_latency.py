"""Database clients' latency over trials: their histograms merged, never their percentiles averaged."""

from __future__ import annotations

import numpy as np

from layerbench.analysis.latency import client_percentiles
from layerbench.records import hdr
from tests.unit.stored import stored_trial


def test_percentiles_come_from_the_histograms_of_every_trial_merged() -> None:
    fast = np.full(990, 100.0)  # trial 1: 990 reads at 100 µs, 10 at 50 ms
    slow = np.full(500, 2000.0)  # trial 2: 500 reads at 2 ms
    first = hdr.of_values(np.concatenate([fast, np.full(10, 50_000.0)]))
    second = hdr.of_values(slow)
    trials = [stored_trial(1, "cell", latency={"read": first}), stored_trial(2, "cell", latency={"read": second})]
    (row,) = client_percentiles(trials).to_dict("records")
    assert (row["trials"], row["operations"], row["operation"]) == (2, 1500, "read")
    # Pooled, 1% of 1500 is 15 operations: the 10 at 50 ms and 5 at 2 ms, so p99 is 2 ms.
    assert abs(row["p99"] - 2000) / 2000 < 0.001
    p99s = [hdr.value_at_percentile(h, 99) for h in (first, second)]
    assert p99s == [100, 2000]  # each trial's own p99 (1% of trial 1 is its 10 slowest)
    assert np.mean(p99s) == 1050  # what averaging them would have claimed, instead of 2 ms
    assert abs(row["p50"] - 100) / 100 < 0.001
    # Seed 001's tail: p90 (990 of 1500 at 100 µs is 66%, so p90 falls in the 2 ms trial) and the worst.
    assert abs(row["p90"] - 2000) / 2000 < 0.001 and abs(row["max"] - 50_000) / 50_000 < 0.001


def test_trials_without_histograms_and_pgbench_transactions() -> None:
    one = hdr.of_values(np.array([1000.0, 3000.0]))
    # pgbench: one kind of operation; trial 2 kept none
    (row,) = client_percentiles([stored_trial(1, "c", latency={"": one}), stored_trial(2, "c")]).to_dict("records")
    assert (row["operation"], row["trials"], row["operations"]) == ("transaction", 1, 2)
    assert client_percentiles([]).empty
