"""Three verdicts, each shown: different, equivalent (≈) or undecided, over all of a run's comparisons at once.

A comparison is decided on the log scale (analysis.stats.LogRatio: mean log ratio, its standard error and
degrees of freedom), so its ratio, interval and p-values come from one t statistic and cannot disagree.

- **different** (``slower`` or ``faster``): significant after Benjamini-Hochberg's correction over every
  comparison the run prints (q < alpha), and at least ``MATERIAL`` in size;
- **equivalent** (``≈``): two one-sided tests (TOST) show the ratio inside the band ×1/1.05 to ×1.05,
  under the same correction at alpha/2 a side, which is exactly the shown interval lying inside the band
  (a run's many equivalences are corrected as its differences are);
- **undecided**: anything else, shown with its interval (or why it has none): "not significant" is
  never "the same".

A comparison's spread over three or four rounds can come out far too small by luck (below a tenth of the
true spread once in a hundred comparisons at three rounds), and a tiny spread makes any mean look decided:
a true 10% cost then shows as ≈ about once in 20,000 comparisons. The run's other comparisons say what
spread rounds have on this host, so each comparison's variance is taken as no smaller than its empirical
Bayes estimate (Smyth's moderated variance, limma's ``squeezeVar``: a prior fitted to all the run's
variances, then each variance shrunk toward it), at its own degrees of freedom. This only widens
intervals, never narrows them: every error rate above still holds, and the shown interval is the one
decided on.

A run whose data decide when it stops (a budget or a precision target: ``Trials.sequential``) is judged
another way, in which every printed interval is the one its verdict was decided on and both hold at any
stop (``judge(..., sequential=True)``): each comparison's interval is its confidence sequence
(analysis/anytime.py), corrected over the run's K comparisons as ``decide_sequential`` says (e-BY: at
5%·|S|/K for the S comparisons decided), and the verdict follows from that interval and the band alone: ≈
when the whole interval lies inside ×1/1.05 to ×1.05, slower or faster when otherwise it lies wholly below or
above ×1, undecided else. A verdict is wrong only where its interval missed the true ratio
(tests/unit/test_decisions.py simulates a thousand runs stopped at random rounds and at their budget). A fixed count of
rounds keeps the fixed-n rules above for now: over three or four rounds the sequences are several times
wider, and fixed runs are what the seeds' presets reproduce.

Vectorised over the last axis (a run's comparisons) and any leading ones (tests/unit/test_verdicts.py
simulates a thousand runs at once).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from layerbench.analysis import anytime
from layerbench.analysis.lazy_special import special
from layerbench.analysis.stats import LogRatio, Ratio, log_ratios

MATERIAL = 0.05  # smaller differences do not survive a rerun here (issue 17): neither named nor acted on
BAND = math.log1p(MATERIAL)  # the material band on the log scale: |log ratio| below this is no difference
SLOWER, FASTER, EQUIVALENT, UNDECIDED = "slower", "faster", "equivalent", "undecided"
DIFFERENT = (SLOWER, FASTER)
# The three categories a verdict falls in (bench/reproducibility.py counts moves between them).
CATEGORY = {SLOWER: "different", FASTER: "different", EQUIVALENT: "equivalent", UNDECIDED: "undecided"}


@dataclass(frozen=True)
class Judged:
    """One comparison as every report shows it: its ratio and interval, its verdict, and why."""

    ratio: Ratio
    verdict: str
    q_value: float  # Benjamini-Hochberg's adjusted p-value of the difference over the run; NaN: untested
    note: str = ""  # why there is no interval (one round, a value not above zero, no spread)
    paired: bool = True  # paired by round; False: unpaired (Welch on the logs), the rounds did not pair


def bh(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values along the last axis; NaN (no test) stays NaN and is not counted."""
    p = np.asarray(p, dtype=float)
    tested = ~np.isnan(p)
    m = tested.sum(axis=-1, keepdims=True)
    order = np.argsort(np.where(tested, p, np.inf), axis=-1)
    ranked = np.take_along_axis(p, order, axis=-1)
    rank = np.arange(1, p.shape[-1] + 1)
    scaled = np.where(rank <= m, ranked * m / rank, np.inf)
    # The smallest scaled value from each rank on: the step-up part of BH.
    stepped = np.minimum.accumulate(scaled[..., ::-1], axis=-1)[..., ::-1]
    q = np.empty_like(p)
    np.put_along_axis(q, order, np.minimum(stepped, 1.0), axis=-1)
    return np.where(tested, q, np.nan)


@dataclass(frozen=True)
class Decided:
    """``decide``'s arrays, one entry per comparison."""

    verdict: np.ndarray  # of str
    p_value: np.ndarray  # two-sided, of the difference
    q_value: np.ndarray  # BH over the comparisons
    p_equivalent: np.ndarray  # TOST's, against the material band
    q_equivalent: np.ndarray
    sem: np.ndarray  # the standard errors decided on and shown: each no smaller than its moderated one


def decide(mean: np.ndarray, sem: np.ndarray, df: np.ndarray, alpha: float = 0.05) -> Decided:
    """The verdict of each comparison (log-scale ``mean``, ``sem``, ``df``; NaN sem: no interval), with
    each standard error no smaller than its moderated one (``floored``), as ``Decided.sem`` gives it."""
    mean, df = np.asarray(mean, dtype=float), np.asarray(df, dtype=float)
    sem = floored(np.asarray(sem, dtype=float), df)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = 2 * special.stdtr(df, -np.abs(mean / sem))
        p_low = special.stdtr(df, -(mean + BAND) / sem)  # H0: the ratio is at or below ×1/1.05
        p_high = special.stdtr(df, (mean - BAND) / sem)  # H0: the ratio is at or above ×1.05
    p_eq = np.maximum(p_low, p_high)
    q, q_eq = bh(p), bh(p_eq)
    different = (q < alpha) & (np.abs(mean) >= BAND)
    equivalent = (q_eq < alpha / 2) & ~different
    verdict = np.where(different, np.where(mean < 0, SLOWER, FASTER), np.where(equivalent, EQUIVALENT, UNDECIDED))
    return Decided(verdict, p, q, p_eq, q_eq, sem)


def judge(comparisons: Sequence[LogRatio], confidence: float = 0.95, sequential: bool = False) -> list[Judged]:
    """Every comparison of a run at once: one family, one correction, one interval each; ``sequential``: the
    run's data decided when it stopped, so each interval is a confidence sequence (``judge_sequential``)."""
    if not comparisons:
        return []
    if sequential:
        return judge_sequential(comparisons, confidence)
    columns = np.array([(c.mean, c.sem, c.df) for c in comparisons], dtype=float).T
    d = decide(columns[0], columns[1], columns[2], 1 - confidence)
    ratios = log_ratios(columns[0], d.sem, columns[2], confidence)  # each log_ratio with its floored sem
    rows = zip(comparisons, ratios, d.verdict.tolist(), d.q_value.tolist(), strict=True)
    return [Judged(r, str(v), float(q), c.note, c.paired) for c, r, v, q in rows]


@dataclass(frozen=True)
class Sequenced:
    """``decide_sequential``'s arrays, one entry per comparison, on the log scale."""

    verdict: np.ndarray  # of str
    low: np.ndarray  # the interval decided on and shown: NaN where there is none, infinite where not yet bounded
    high: np.ndarray
    p_value: np.ndarray  # the anytime-valid p-value of "no difference" (1 / its e-value)
    q_value: np.ndarray  # p_value times the family's size, at most 1
    sem: np.ndarray  # the standard errors decided on and shown: each no smaller than its moderated one


def family_size(sem: np.ndarray) -> np.ndarray:
    """The comparisons with an interval along the last axis: the Bonferroni divisor (at least 1)."""
    return np.maximum((~np.isnan(sem)).sum(axis=-1, keepdims=True), 1)


def decide_sequential(mean: np.ndarray, sem: np.ndarray, df: np.ndarray, alpha: float = 0.05) -> Sequenced:
    """The interval and the verdict read off it, of each comparison (log-scale ``mean``, ``sem``, ``df``: n - 1
    for n paired rounds; NaN sem: no interval), the family of K along the last axis.

    Each interval is the comparison's confidence sequence at α·|S|/K, where S is the set of comparisons those
    intervals decide (the e-BY procedure of Xu, Wang and Ramdas, 2022: for any selection, e-value intervals at
    that level keep the false coverage rate of the selected ones at α, under any dependence). S is found from
    one (Bonferroni's α/K) upward: a narrower interval only decides more, so the largest consistent S is
    reached in at most K steps. Each interval is at least a 95% sequence on its own, since |S| ≤ K."""
    mean, df = np.asarray(mean, dtype=float), np.asarray(df, dtype=float)
    sem = floored(np.asarray(sem, dtype=float), df)
    k = family_size(sem)
    selected = np.ones_like(k)
    for _ in range(sem.shape[-1] + 1):
        half = anytime.halfwidths(sem, df + 1, np.broadcast_to(alpha * selected / k, sem.shape))
        low, high = mean - half, mean + half
        verdict = _read_off(low, high)
        grown = np.maximum(selected, np.maximum((verdict != UNDECIDED).sum(axis=-1, keepdims=True), 1))
        if np.array_equal(grown, selected):
            break
        selected = grown
    p = anytime.p_values(mean / sem, df + 1)
    return Sequenced(verdict, low, high, p, np.minimum(p * k / selected, 1.0), sem)


def _read_off(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """The verdict an interval gives against the band: ≈ inside it, slower or faster wholly below or above ×1."""
    equivalent = (low >= -BAND) & (high <= BAND)
    return np.where(equivalent, EQUIVALENT, np.where(high < 0, SLOWER, np.where(low > 0, FASTER, UNDECIDED)))


def judge_sequential(comparisons: Sequence[LogRatio], confidence: float = 0.95) -> list[Judged]:
    """``judge`` of a run whose data decided when it stopped: intervals valid at any stop, verdicts read off them."""
    columns = np.array([(c.mean, c.sem, c.df) for c in comparisons], dtype=float).T
    d = decide_sequential(columns[0], columns[1], columns[2], 1 - confidence)
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
LEGEND = "↓ slower, ↑ faster (named: significant after the run's correction and ≥5%), ≈ within ±5% (shown), ? undecided"
# A budget run's verdicts are read off their intervals alone, which hold whenever the run stopped.
SEQUENTIAL_LEGEND = (
    "↓ slower, ↑ faster (the whole interval below or above ×1), ≈ (the whole interval inside ±5%), ? undecided; "
    "the intervals hold whenever the run stops"
)


def legend(sequential: bool) -> str:
    return SEQUENTIAL_LEGEND if sequential else LEGEND


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
