"""The confidence sequences of analysis/anytime.py hold at every look at once: a simulation of many runs, each
looked at after every value from the second to the sixtieth, misses its true mean at any look in at most α."""

from __future__ import annotations

import math

import numpy as np
import pytest

from layerbench.analysis import anytime

LOOKS = 60


@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_the_sequence_misses_at_any_of_sixty_looks_in_at_most_alpha(alpha: float) -> None:
    x = np.random.default_rng(int(alpha * 1000)).standard_normal((20_000, LOOKS))
    n = np.arange(1, LOOKS + 1)
    mean = np.cumsum(x, axis=1) / n
    var = (np.cumsum(x * x, axis=1) - n * mean * mean) / np.maximum(n - 1, 1)
    sem = np.sqrt(np.maximum(var, 0) / n)
    half = anytime.boundaries(n[1:].astype(float), np.full(LOOKS - 1, alpha)) * sem[:, 1:]
    missed = (np.abs(mean[:, 1:]) > half).any(axis=1).mean()
    assert missed <= alpha
    # and it is no vacuous interval: after sixty values, about 3.6 standard errors at 5%
    assert anytime.boundary(LOOKS, 0.05) < 4.0


def test_a_smaller_alpha_and_fewer_values_widen_it_and_two_values_bound_nothing() -> None:
    assert math.isinf(anytime.boundary(2, 0.05))
    assert anytime.boundary(4, 0.01) > anytime.boundary(4, 0.05) > anytime.boundary(20, 0.05)
