"""Confidence sequences for the mean of normal values whose variance is unknown: intervals that hold at every
round at once, so a run may stop whenever it likes (all decided, the budget spent, Ctrl-C) and its intervals
stay valid. A budget run's table gives each cell's mean with one (``stats.summaries``); its comparisons,
which decide, are judged at fixed looks instead (analysis/looks.py: far narrower at the few rounds a run has).

The e-value of "the mean is m" after n values is a Bayes factor of the one-sample t statistic: a normal prior
of scale ``g`` on the standardised effect (the mean over the standard deviation) and the right Haar prior
(1/σ) on the unknown spread,

    E_g(t, n) = (1 + n g)^(-1/2) · [(1 + t²/ν) / (1 + t²/(ν (1 + n g)))]^((ν + 1)/2),   ν = n - 1,

the form Rouder et al. (2009) integrate over g for their JZS t-test. Under the null it is a nonnegative
martingale in the values' scale-invariant filtration (Lai 1976; Pérez-Ortiz, Lardy, de Heide and Grünwald,
"E-statistics, group invariance and anytime valid testing", 2024), so by Ville's inequality it ever reaches
1/α with probability at most α. A mixture of such e-processes is one too; mixing over ``SCALES`` makes the
sequence tight for large effects after few rounds (seed 000's ×0.07) and for small ones after many. The
interval {m : E(t(m), n) < 1/α} is the mean ± ``boundary(n, α)`` standard errors, since E grows with |t|.

We wrote these forty lines rather than take a library: ``expectation`` (the candidate the issue names) needs
Python 3.12 and is GPL-3.0, and ``confseq``'s boundaries assume a known variance bound, which a benchmark's
log-ratios do not have. tests/unit/test_anytime.py checks the coverage at every look by simulation.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

# The prior scales mixed, in units of the effect's standard deviation squared, with equal weights.
SCALES = (0.5, 5.0, 50.0, 500.0)


@lru_cache(maxsize=4096)
def boundary(n: int, alpha: float) -> float:
    """The |t| at which the e-value reaches 1/α after ``n`` values: the half-width of the confidence sequence in
    standard errors; infinite where no t is large enough yet (too few values for so small an α)."""
    return float(boundaries(np.array([n], dtype=float), np.array([alpha]))[0])


def boundaries(n: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """``boundary`` of each (n, α), by bisection on all of them at once (E grows with |t|)."""
    target = np.log(1 / alpha)
    finite = (n >= 2) & (_ceilings(n) > target)
    n = np.where(finite, n, 2.0)
    low, high = np.zeros_like(target), np.ones_like(target)
    for _ in range(64):  # doubling: the boundary is below 2^64 standard errors for any n >= 2 here
        short = _log_e(high, n) < target
        if not short[finite].any():
            break
        high = np.where(short, high * 2, high)
    for _ in range(60):
        mid = (low + high) / 2
        below = _log_e(mid, n) < target
        low, high = np.where(below, mid, low), np.where(below, high, mid)
    return np.where(finite, high, np.inf)


def _log_e(t: np.ndarray, n: np.ndarray) -> np.ndarray:
    """log E(t, n) of the mixture, vectorised (n >= 2)."""
    nu = n - 1
    logs = [
        -0.5 * np.log1p(n * g) + (nu + 1) / 2 * (np.log1p(t * t / nu) - np.log1p(t * t / (nu * (1 + n * g))))
        for g in SCALES
    ]
    return np.logaddexp.reduce(np.stack(logs), axis=0) - math.log(len(SCALES))


def _ceilings(n: np.ndarray) -> np.ndarray:
    """log E as |t| grows without bound: the most evidence ``n`` values can give."""
    with np.errstate(invalid="ignore"):
        logs = [np.maximum(n - 1, 0) / 2 * np.log1p(n * g) for g in SCALES]
    return np.logaddexp.reduce(np.stack(logs), axis=0) - math.log(len(SCALES))
