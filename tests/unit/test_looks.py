"""A budget run's looks (analysis/looks.py): their shares of α sum to one, and Student's t interval at each
look's share misses the true mean at any of the looks, together, in at most α: what lets a run stop anywhere."""

from __future__ import annotations

import math

import numpy as np
import pytest

from layerbench.analysis import looks
from layerbench.analysis.lazy_special import special


def test_the_shares_sum_to_one_and_fall_from_look_to_look() -> None:
    assert math.isclose(sum(looks.SHARES), 1.0)
    assert all(a > b for a, b in zip(looks.SHARES, looks.SHARES[1:], strict=False))
    assert list(looks.LOOKS) == sorted(set(looks.LOOKS)) and looks.LOOKS[0] == 2


def test_the_last_look_is_the_largest_at_or_before_the_rounds_run() -> None:
    assert [looks.last(n) for n in (0, 1, 2, 3, 7, 8, 9, 5000)] == [0, 0, 2, 3, 6, 8, 8, 1000]
    assert np.isnan(looks.shares(np.array([7.0]))[0])
    assert looks.shares(np.array([8.0]))[0] == looks.SHARES[looks.LOOKS.index(8)]


@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_intervals_at_every_look_up_to_sixty_rounds_miss_together_in_at_most_alpha(alpha: float) -> None:
    x = np.random.default_rng(int(alpha * 1000)).standard_normal((20_000, 60))
    ns = np.array([n for n in looks.LOOKS if n <= 60])
    total, squares = np.cumsum(x, axis=1)[:, ns - 1], np.cumsum(x * x, axis=1)[:, ns - 1]
    mean = total / ns
    sem = np.sqrt((squares - ns * mean * mean) / (ns - 1) / ns)
    half = special.stdtrit(ns - 1.0, 1 - alpha * looks.shares(ns.astype(float)) / 2) * sem
    missed = (np.abs(mean) > half).any(axis=1).mean()
    assert missed <= alpha
    assert missed > alpha / 4  # the union bound is loose, not vacuous: the looks share a path
