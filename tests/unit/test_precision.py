from __future__ import annotations

import numpy as np
from scipy import stats

from layerbench.analysis.precision import precise_enough, relative_halfwidth


def test_halfwidth_matches_scipy_interval() -> None:
    values = [100.0, 104.0, 98.0, 101.0, 97.0]
    low, high = stats.t.interval(0.95, len(values) - 1, loc=np.mean(values), scale=stats.sem(values))
    assert abs(relative_halfwidth(values) - (high - low) / 2 / np.mean(values)) < 1e-12


def test_needs_min_n_and_target() -> None:
    steady = [100.0, 100.5, 99.5, 100.2, 99.8]
    assert precise_enough(steady, 0.03, 3)
    assert not precise_enough(steady[:2], 0.03, 3)
    noisy = [100.0, 140.0, 70.0, 120.0, 90.0]
    assert not precise_enough(noisy, 0.03, 3)
    assert relative_halfwidth([5.0]) == float("inf")
