"""Latency percentiles from merged histograms, never from averaged percentiles.

fio's json+ output carries each job's completion-latency histogram: bins keyed
by latency in ns with a count each. The p99 of two jobs (or two trials) is the
p99 of their merged histogram; the mean of their p99s is not a percentile of
anything.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

import numpy as np

STANDARD = (50.0, 90.0, 95.0, 99.0, 99.9)


def merge(histograms: Iterable[Mapping[int, int]]) -> Counter[int]:
    total: Counter[int] = Counter()
    for hist in histograms:
        total.update(hist)
    return total


def percentiles(hist: Mapping[int, int], points: Iterable[float] = STANDARD) -> dict[str, float]:
    """The smallest bin value at or above each requested share of samples (fio's own rule)."""
    if not hist or sum(hist.values()) == 0:
        return {}
    values = np.array(sorted(hist), dtype=float)
    cumulative = np.cumsum([hist[int(v)] for v in values])
    total = cumulative[-1]
    out = {}
    for p in points:
        index = int(np.searchsorted(cumulative, total * p / 100.0, side="left"))
        out[label(p)] = float(values[min(index, len(values) - 1)])
    return out


def sorted_percentiles(values: np.ndarray, counts: np.ndarray, points: Iterable[float] = STANDARD) -> dict[str, float]:
    """``percentiles`` of a histogram given as its bin values (ascending) and their counts."""
    cumulative = np.cumsum(counts)
    if not len(values) or cumulative[-1] == 0:
        return {}
    total = cumulative[-1]
    wanted = np.array([total * p / 100.0 for p in points])
    index = np.minimum(np.searchsorted(cumulative, wanted, side="left"), len(values) - 1)
    return {label(p): float(values[i]) for p, i in zip(points, index.tolist(), strict=True)}


def label(p: float) -> str:
    return f"p{p:g}"
