"""When has a cell been measured enough? Its interval is narrow enough, or it hit the cap.

Looking after every round and stopping once an interval is narrow enough picks the moments the spread happens
to look small, so the usual 95% t-interval at the stop covers the true mean less often (about 92% in a
simulation with min 3, cap 10: tests/unit/test_precision.py). The interval judged here is a confidence
sequence (analysis/anytime.py), valid at every look at once, so stopping on it costs no correction: the
interval at the stop is a 95% one, whatever the stopping rule did. (Until 2026-12 this was Bonferroni's over
the looks, which widened every interval of a precision run, its comparisons' too.) The sequence is wider
than a fixed-n interval at the same n, more so over few rounds: the price of looking as often as one likes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from layerbench.analysis import anytime
from layerbench.spec.models import Trials

NOMINAL = 0.95


def relative_halfwidth(values: Sequence[float], level: float = NOMINAL) -> float:
    """Half-width of the mean's confidence sequence after these values, as a share of the mean."""
    if len(values) < 2:
        return float("inf")
    arr = np.asarray(values, dtype=float)
    mean = float(arr.mean())
    if mean == 0:
        return float("inf")
    sem = float(arr.std(ddof=1)) / len(arr) ** 0.5
    return anytime.boundary(len(arr), 1 - level) * sem / abs(mean)


def confidence(trials: Trials) -> float:
    """The confidence of every interval of a run: 95%, a precision target or not (the intervals that decide
    hold at any stop, so stopping early owes no correction)."""
    return NOMINAL


def precise_enough(values: Sequence[float], target: float, min_n: int, level: float = NOMINAL) -> bool:
    return len(values) >= min_n and relative_halfwidth(values, level) <= target
