"""When has a cell been measured enough? Its 95% CI is narrow enough, or it hit the cap."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats


def relative_halfwidth(values: Sequence[float], confidence: float = 0.95) -> float:
    """Half-width of the Student-t confidence interval of the mean, as a share of the mean."""
    if len(values) < 2:
        return float("inf")
    arr = np.asarray(values, dtype=float)
    mean = float(arr.mean())
    if mean == 0:
        return float("inf")
    sem = float(stats.sem(arr))
    t = float(stats.t.ppf(0.5 + confidence / 2, len(arr) - 1))
    return t * sem / abs(mean)


def precise_enough(values: Sequence[float], target: float, min_n: int) -> bool:
    return len(values) >= min_n and relative_halfwidth(values) <= target
