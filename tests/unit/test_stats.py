from __future__ import annotations

import math

import numpy as np
from scipy import stats

from layerbench.analysis.stats import ratio, summarize


def test_summary_matches_scipy() -> None:
    values = [980.0, 1010.0, 1005.0, 995.0, 1020.0]
    s = summarize(values)
    low, high = stats.t.interval(0.95, 4, loc=np.mean(values), scale=stats.sem(values))
    assert s.n == 5 and s.mean == np.mean(values) and s.median == 1005.0
    assert math.isclose(s.std, np.std(values, ddof=1))
    assert math.isclose(s.ci_low, low) and math.isclose(s.ci_high, high)
    assert math.isclose(s.cv, s.std / s.mean)


def test_one_trial_has_no_interval() -> None:
    s = summarize([1234.0])
    assert s.n == 1 and s.mean == 1234.0
    assert math.isnan(s.ci_low) and math.isnan(s.std) and math.isnan(s.ci_halfwidth_pct)


def test_identical_cells_are_not_different() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.normal(1000, 30, 6), rng.normal(1000, 30, 6)
    r = ratio(a, b)
    assert r.ci_low < 1.0 < r.ci_high
    assert not r.significant


def test_halved_cell_is_different_and_its_interval_holds_half() -> None:
    rng = np.random.default_rng(4)
    base = rng.normal(1000, 30, 5)
    half = rng.normal(500, 15, 5)
    r = ratio(half, base)
    assert r.significant
    assert r.ci_low < 0.5 < r.ci_high
    assert abs(r.ratio - 0.5) < 0.05


def test_ratio_without_repetitions_has_no_interval() -> None:
    r = ratio([500.0], [1000.0])
    assert r.ratio == 0.5 and math.isnan(r.ci_low) and not r.significant
