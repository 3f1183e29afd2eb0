"""Latency histograms of database clients (HdrHistogram), kept with each trial and merged when read.

YCSB's clients write HdrHistogram logs; pgbench's per-transaction latencies
are recorded into the same kind of histogram. A trial stores, per operation,
the histogram of all its instances' clients in HdrHistogram's compact
encoding (a few KB), so a cell's percentiles over all its trials come from
one merged histogram, never from averaged percentiles.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from hdrh.histogram import HdrHistogram

HIGHEST_US = 10**12  # latencies in µs, up to 11.5 days: nothing a client reports is cut
DIGITS = 3  # 0.1% resolution


def new() -> HdrHistogram:
    return HdrHistogram(1, HIGHEST_US, DIGITS)


def of_values(values: np.ndarray) -> HdrHistogram:
    h = new()
    for v in values:
        h.record_value(max(1, int(v)))
    return h


def merged(histograms: Iterable[HdrHistogram]) -> HdrHistogram:
    total = new()
    for h in histograms:
        total.add(h)
    return total


def encode(h: HdrHistogram) -> str:
    return h.encode().decode("ascii")


def decode(text: str) -> HdrHistogram:
    return HdrHistogram.decode(text.encode("ascii"))


def value_at_percentile(h: HdrHistogram, percentile: float) -> int:
    """The Java HdrHistogram's rule, so one client's log gives exactly the percentiles YCSB printed.

    Java takes the first bucket whose cumulative count reaches ceil(p% of the
    total) (p one ulp lower, against round-off); hdrh rounds that count to the
    nearest instead and can answer one bucket lower.
    """
    requested = min(max(math.nextafter(percentile, -math.inf), 0.0), 100.0)
    rank = max(1, math.ceil(requested / 100.0 * h.get_total_count()))
    seen = 0
    for index in range(h.counts_len):
        seen += h.get_count_at_index(index)
        if seen >= rank:
            return int(h.get_highest_equivalent_value(h.get_value_from_index(index)))
    return 0
