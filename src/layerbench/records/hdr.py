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
from typing import TYPE_CHECKING

from hdrh.codec import HdrHistogramEncoder
from hdrh.histogram import HdrHistogram

if TYPE_CHECKING:
    import numpy as np

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
    """An encoded histogram, decoded into one at least as wide as ours.

    hdrh sizes the counts by the header's highest trackable value, but an auto-resizing Java histogram
    (YCSB's) can write more counts than that: hdrh then fails with "Destination array overrun" (seen
    with a slow outlier behind Docker's userland proxy). Which bucket holds a value depends only on the
    lowest value and the digits, so a wider histogram reads the same counts at the same places.
    """
    payload = HdrHistogramEncoder.decode(text.encode("ascii"), True)
    head = payload.payload
    highest = max(head.highest_trackable_value, HIGHEST_US)
    return HdrHistogram(head.lowest_trackable_value, highest, head.significant_figures, hdr_payload=payload)


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
