"""Three verdicts, each shown: different, equivalent (≈) or undecided, read off one interval per comparison.

A comparison is the mean of its per-round log ratios (analysis.stats.LogRatio). Its interval is a confidence
sequence (analysis/anytime.py): valid at every round at once, so the run may stop when it likes (everything
decided, its budget spent, Ctrl-C, a resume later) and what it printed stays true. The run's K comparisons
are one family: each sequence is taken at 5%/K, so all K intervals hold together with 95% probability at
any stop (Bonferroni over the comparisons; over the looks nothing is owed). The verdict follows from the
interval printed beside it and the material band ×1/1.05 to ×1.05 alone, by one rule:

- **≈** (equivalent): the whole interval inside the band;
- **slower** / **faster**: otherwise, the whole interval below / above ×1;
- **undecided**: anything else, shown with its interval (or why it has none): "not significant" is never
  "the same".

So a reader holding the interval and the band derives the verdict, and every verdict of a run is wrong only
where some interval missed its true ratio: at most 5% of runs.

A comparison's spread over three or four rounds can come out far too small by luck, and a tiny spread makes
any mean look decided. The run's other comparisons say what spread rounds have on this host, so each
comparison's variance is taken as no smaller than its empirical Bayes estimate (Smyth's moderated variance,
limma's ``squeezeVar``: a prior fitted to all the run's variances, then each variance shrunk toward it).
This only widens intervals, never narrows them: every error rate above still holds, and the shown interval
is the one decided on. Vectorised over the last axis (a run's comparisons) and any leading ones
(tests/unit/test_verdicts.py simulates a thousand runs at once).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from layerbench.analysis import anytime
from layerbench.analysis.lazy_special import special
from layerbench.analysis.stats import LogRatio, Ratio

MATERIAL = 0.05  # smaller differences do not survive a rerun here (issue 17): neither named nor acted on
BAND = math.log1p(MATERIAL)  # the material band on the log scale: |log ratio| below this is no difference
SLOWER, FASTER, EQUIVALENT, UNDECIDED = "slower", "faster", "equivalent", "undecided"
DIFFERENT = (SLOWER, FASTER)
# The three categories a verdict falls in (bench/reproducibility.py counts moves between them).
CATEGORY = {SLOWER: "different", FASTER: "different", EQUIVALENT: "equivalent", UNDECIDED: "undecided"}


@dataclass(frozen=True)
class Judged:
    """One comparison as every report shows it: its ratio and interval, its verdict, and why."""

    ratio: Ratio  # its interval: the comparison's confidence sequence at the run's correction
    verdict: str
    q_value: float  # the anytime p-value of "no difference", times the comparisons (Bonferroni); NaN: untested
    note: str = ""  # why there is no interval (one round, a value not above zero, no spread)
    paired: bool = True  # paired by round; False: unpaired (Welch on the logs), the rounds did not pair


@dataclass(frozen=True)
class Decided:
    """``decide``'s arrays, one entry per comparison, on the log scale."""

    verdict: np.ndarray  # of str
    low: np.ndarray  # the interval decided on and shown: NaN where there is none
    high: np.ndarray
    p_value: np.ndarray  # the anytime-valid p-value of "no difference" (1 / its e-value)
    q_value: np.ndarray  # p_value times the family's size, at most 1
    sem: np.ndarray  # the standard errors decided on and shown: each no smaller than its moderated one


def family_size(sem: np.ndarray) -> np.ndarray:
    """The comparisons with an interval along the last axis: the Bonferroni divisor (at least 1)."""
    return np.maximum((~np.isnan(sem)).sum(axis=-1, keepdims=True), 1)


def decide(mean: np.ndarray, sem: np.ndarray, df: np.ndarray, alpha: float = 0.05) -> Decided:
    """The interval and verdict of each comparison (log-scale ``mean``, ``sem``, ``df``: n - 1 for n paired
    rounds; NaN sem: no interval), the family along the last axis."""
    mean, df = np.asarray(mean, dtype=float), np.asarray(df, dtype=float)
    sem = floored(np.asarray(sem, dtype=float), df)
    k = np.broadcast_to(family_size(sem), sem.shape)
    half = anytime.halfwidths(sem, df + 1, alpha / k)
    low, high = mean - half, mean + half
    equivalent = (low >= -BAND) & (high <= BAND)
    verdict = np.where(
        equivalent, EQUIVALENT, np.where(high < 0, SLOWER, np.where(low > 0, FASTER, UNDECIDED))
    ).astype(object)
    p = anytime.p_values(mean / sem, df + 1)
    return Decided(verdict, low, high, p, np.minimum(p * k, 1.0), sem)


def judge(comparisons: Sequence[LogRatio], confidence: float = 0.95) -> list[Judged]:
    """Every comparison of a run at once: one family, one correction, one interval each."""
    if not comparisons:
        return []
    columns = np.array([(c.mean, c.sem, c.df) for c in comparisons], dtype=float).T
    d = decide(columns[0], columns[1], columns[2], 1 - confidence)
    out = []
    for i, c in enumerate(comparisons):
        m, low, high = columns[0][i], float(d.low[i]), float(d.high[i])
        ratio = Ratio(math.exp(m), math.exp(low), math.exp(high), float(d.p_value[i])) if low == low else _bare(m)
        out.append(Judged(ratio, str(d.verdict[i]), float(d.q_value[i]), c.note, c.paired))
    return out


def _bare(mean: float) -> Ratio:
    """A comparison without an interval: its ratio where it has a mean."""
    nan = float("nan")
    return Ratio(math.exp(mean) if mean == mean else nan, nan, nan, nan)


MIN_FOR_PRIOR = 3  # comparisons with a spread needed before their variances say anything about each other


def floored(sem: np.ndarray, df: np.ndarray) -> np.ndarray:
    """Each standard error raised to its moderated value where that is larger (along the last axis: one
    run's comparisons). Variances per round are ``sem² (df + 1)``: a paired comparison's n is df + 1."""
    s2 = sem * sem * (df + 1)
    d0, s0 = _prior(s2, df)
    with np.errstate(invalid="ignore", divide="ignore"):
        moderated = np.where(np.isinf(d0), s0, (d0 * s0 + df * s2) / (d0 + df))
        lifted = np.sqrt(np.maximum(s2, moderated) / (df + 1))
    return np.where(np.isnan(sem) | np.isnan(moderated), sem, lifted)


def _prior(s2: np.ndarray, df: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Smyth's (2004) prior degrees of freedom and variance, fitted by moments to log variances (limma's
    ``fitFDist`` without covariates); NaN where a run has fewer than MIN_FOR_PRIOR variances."""
    ok = np.isfinite(s2) & (s2 > 0) & np.isfinite(df) & (df > 0)
    n = ok.sum(axis=-1, keepdims=True)
    half = np.where(ok, df, 1.0) / 2
    e = np.where(ok, np.log(np.where(ok, s2, 1.0)) - special.digamma(half) + np.log(half), 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = e.sum(axis=-1, keepdims=True) / n
        spread = np.where(ok, (e - mean) ** 2, 0.0).sum(axis=-1, keepdims=True) / (n - 1)
        excess = spread - np.where(ok, special.polygamma(1, half), 0.0).sum(axis=-1, keepdims=True) / n
        d0 = np.where(excess > 0, 2 * _trigamma_inverse(np.where(excess > 0, excess, 1.0)), np.inf)
        s0 = np.where(np.isinf(d0), np.exp(mean), np.exp(mean + special.digamma(d0 / 2) - np.log(d0 / 2)))
    enough = n >= MIN_FOR_PRIOR
    return np.where(enough, d0, np.nan), np.where(enough, s0, np.nan)


def _trigamma_inverse(x: np.ndarray) -> np.ndarray:
    """y with trigamma(y) = x, by Newton's method from 0.5 + 1/x (limma's ``trigammaInverse``)."""
    if np.any(x > 1e7) or np.any(x < 1e-6):  # limma's asymptotes: Newton's start is poor out there
        return np.where(x > 1e7, 1 / np.sqrt(x), np.where(x < 1e-6, 1 / x, _trigamma_inverse(np.clip(x, 1e-6, 1e7))))
    y = 0.5 + 1 / x
    for _ in range(50):
        tri = special.polygamma(1, y)
        step = tri * (1 - tri / x) / special.polygamma(2, y)
        y = y + step
        if np.all(-step / y < 1e-8):
            break
    return y


# How a verdict marks a ratio in the tables (legend: LEGEND).
MARKS = {SLOWER: "↓", FASTER: "↑", EQUIVALENT: "≈", UNDECIDED: "?"}
LEGEND = (
    "↓ slower, ↑ faster (the whole interval below or above ×1 and not inside ±5%), ≈ (the whole interval inside "
    "±5%), ? undecided; intervals hold for all the run's comparisons together, whenever it stops"
)


def material(r: Ratio) -> bool:
    """At least MATERIAL away from ×1 (the point estimate)."""
    return r.ratio == r.ratio and r.ratio > 0 and abs(math.log(r.ratio)) >= BAND


def level_text(confidence: float) -> str:
    """95% CI, or 99.4% CI for a precision run's intervals."""
    return f"{100 * confidence:.3g}% CI"


def shown(verdict: str, r: Ratio, confidence: float = 0.95, note: str = "") -> str:
    """A comparison in words: ``-12% (×0.88, 95% CI 0.78-0.99)``, ``≈ (×1.01, 95% CI 0.98-1.03)``,
    ``undecided (×1.00, 95% CI 0.46-2.15)``, ``undecided (×0.91, one round)``."""
    if r.ci_low != r.ci_low:
        return f"undecided (×{r.ratio:.2f}, {note or 'no interval'})" if r.ratio == r.ratio else "undecided"
    if math.isinf(r.ci_high):
        return f"undecided (×{r.ratio:.2f}, too few rounds yet to bound it)"
    interval = f"×{r.ratio:.2f}, {level_text(confidence)} {r.ci_low:.2f}-{r.ci_high:.2f}"
    if verdict in DIFFERENT:
        return f"{100 * (r.ratio - 1):+.0f}% ({interval})"
    return f"{'≈' if verdict == EQUIVALENT else 'undecided'} ({interval})"
