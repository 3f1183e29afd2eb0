from __future__ import annotations

import numpy as np

from layerbench.records.percentiles import merge, percentiles


def test_percentile_of_a_known_histogram() -> None:
    hist = {100: 50, 200: 40, 300: 9, 10_000: 1}
    assert percentiles(hist) == {"p50": 100.0, "p90": 200.0, "p95": 300.0, "p99": 300.0, "p99.9": 10_000.0}


def test_merged_percentile_is_not_the_mean_of_percentiles() -> None:
    fast = {100: 990, 150: 10}  # p99 = 100
    slow = {1_000: 10, 5_000: 990}  # p99 = 5000
    merged = percentiles(merge([fast, slow]))
    assert merged["p99"] == 5_000.0
    assert merged["p50"] in (100.0, 150.0, 1_000.0)
    mean_of_p99 = (percentiles(fast)["p99"] + percentiles(slow)["p99"]) / 2
    assert merged["p99"] != mean_of_p99


def test_matches_numpy_on_raw_samples() -> None:
    rng = np.random.default_rng(7)
    samples = rng.integers(1, 500, size=20_000)
    hist = dict(zip(*np.unique(samples, return_counts=True), strict=True))
    got = percentiles({int(k): int(v) for k, v in hist.items()}, [50, 99])
    assert got["p50"] == float(np.percentile(samples, 50, method="inverted_cdf"))
    assert got["p99"] == float(np.percentile(samples, 99, method="inverted_cdf"))


def test_empty() -> None:
    assert percentiles({}) == {}
