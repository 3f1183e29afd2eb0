"""Three verdicts, each shown: different, equivalent (≈) or undecided, over all of a run's comparisons at once.

One rule for every run: each comparison's interval first, corrected over the run's comparisons, then the
verdict read off that interval and the material band ×1/1.05 to ×1.05 alone (``_read_off``):

- **equivalent** (``≈``): the whole interval inside the band;
- **different** (``slower`` or ``faster``): otherwise, the whole interval below or above ×1;
- **undecided**: anything else, shown with its interval (or why it has none): "not significant" is
  never "the same".

So the interval printed beside a verdict is the one it was decided on, and a reader holding the two can
derive the verdict. A difference is named by its interval, whatever its size: a -4% whose interval
excludes ×1 is "slower" (the band says what is "≈", not what may be named; the old rule "significant and
at least 5%" printed "undecided" beside intervals that excluded ×1, issue 53).

The correction is the false coverage rate's (FCR) of Benjamini and Yekutieli ("False discovery
rate-adjusted multiple confidence intervals for selected parameters", JASA 100:71-81, 2005): over the
run's K comparisons with an interval, each interval is taken at level 1 - α·|S|/K, where S is the set of
comparisons those intervals decide. S is the largest set consistent with its own intervals, found from
|S| = K downward (``_corrected``: a wider interval only decides fewer, so at most K steps); where no ≈ is
decided it is exactly Benjamini-Hochberg's discoveries at α, the selection Benjamini and Yekutieli pair their
intervals with (tests/unit/test_verdicts.py holds it to scipy's). Each interval is at least a 1 - α one on
its own, since |S| ≤ K. That is a fixed count of rounds' (the presets') or a precision target's rule
(``decide``). A run whose data decide when it stops (a budget: ``Trials.sequential``) reads each comparison
at its last look (analysis/looks.py) and takes a stronger, simpler correction instead: Bonferroni's over
the K comparisons and, by the union bound, over each one's looks (``decide_sequential``), so the chance
that any of its verdicts is wrong is at most α whenever it stops.

What is guaranteed, and what is not. The FCR is the expected share, among the decided comparisons, of those
whose interval misses the true ratio; a wrong verdict (a difference named where there is none, the wrong
direction, ≈ for a ratio outside the band) needs a missed interval, so wrong verdicts are at most that share
too. It is not the chance that a run has no wrong verdict at all: where many ≈ are decided, |S| is large and
the intervals near 95% each, so a run of twenty comparisons at twenty rounds names a false difference in
about 9% of runs where Benjamini-Hochberg's rule did in 3% (docs/explanation/statistics.md). For
t-intervals Benjamini and Yekutieli prove the bound when the comparisons' estimates are independent and the
selection is "simple" (while a comparison stays selected, changing its own data does not change |S|). The
largest consistent S is: with f(r) the count decided at α·r/K, |S| is the largest r with f(r) ≥ r, and
changing one comparison's data changes only its own term of f, which, while it stays decided at |S|, is 1
at every r ≥ |S|. Under arbitrary dependence they prove only α·(1 + 1/2 + ... + 1/K). A run's comparisons
are not independent: those against one reference cell share its noise, and the variance floor below is
fitted to all of them. No proof we know covers that, so tests/unit/test_fcr_intervals.py simulates it
(independent comparisons, and ten sharing each reference; mixed effects and all null): the share of
decided intervals that miss, and of wrong verdicts, stays within α (at most 4.2% over 3 to 20 rounds).

A comparison's spread over three or four rounds can come out far too small by luck (below a tenth of the
true spread once in a hundred comparisons at three rounds), and a tiny spread makes any mean look decided:
a true 10% cost then shows as ≈ about once in 20,000 comparisons. The run's other comparisons say what
spread rounds have on this host, so each comparison's variance is taken as no smaller than its empirical
Bayes estimate (Smyth's moderated variance, limma's ``squeezeVar``: a prior fitted to all the run's
variances, then each variance shrunk toward it), at its own degrees of freedom. This only widens
intervals, never narrows them, and the shown interval is the one decided on.

Each comparison's p-value is its own (uncorrected: the t-test's, or 1 over its e-value); its q-value is
that p times K/|S|, at most 1, below α exactly when its interval excludes ×1 (``advise`` prints both for
the material differences significant alone but not after the correction).

Vectorised over the last axis (a run's comparisons) and any leading ones (tests/unit/test_verdicts.py
simulates a thousand runs at once).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from layerbench.analysis import looks
from layerbench.analysis.lazy_special import special
from layerbench.analysis.stats import LogRatio, Ratio

MATERIAL = 0.05  # smaller differences do not survive a rerun here (issue 17): named when shown, never acted on
BAND = math.log1p(MATERIAL)  # the material band on the log scale: |log ratio| below this is no difference
SLOWER, FASTER, EQUIVALENT, UNDECIDED = "slower", "faster", "equivalent", "undecided"
DIFFERENT = (SLOWER, FASTER)
# The three categories a verdict falls in (bench/reproducibility.py counts moves between them).
CATEGORY = {SLOWER: "different", FASTER: "different", EQUIVALENT: "equivalent", UNDECIDED: "undecided"}


@dataclass(frozen=True)
class Judged:
    """One comparison as every report shows it: its ratio and interval, its verdict, and why."""

    ratio: Ratio  # the interval decided on; its p_value is the comparison's own, uncorrected
    verdict: str
    q_value: float  # p_value times K/|S|, at most 1: below α exactly when the interval excludes ×1; NaN: untested
    note: str = ""  # why there is no interval (one round, a value not above zero, no spread)
    paired: bool = True  # paired by round; False: unpaired (Welch on the logs), the rounds did not pair
    sem: float = math.nan  # the log ratio's standard error and degrees of freedom the interval was built from
    dof: float = math.nan
    rounds: int = 0  # the rounds it was read from (a budget run's last look)


@dataclass(frozen=True)
class Decided:
    """``decide``'s and ``decide_sequential``'s arrays, one entry per comparison, on the log scale."""

    verdict: np.ndarray  # of str, read off the interval
    low: np.ndarray  # the interval decided on and shown: NaN where there is none, infinite where not yet bounded
    high: np.ndarray
    p_value: np.ndarray  # of "no difference", the comparison's own t-test
    q_value: np.ndarray  # p_value over its interval's share of α (K/|S|; a budget run's K over the look's share)
    sem: np.ndarray  # the standard errors decided on and shown: each no smaller than its moderated one
    selected: np.ndarray  # |S| along the last axis (kept as an axis of one; at least 1): the intervals' α·|S|/K
    dof: np.ndarray  # each interval's degrees of freedom


def family_size(sem: np.ndarray) -> np.ndarray:
    """The comparisons with an interval along the last axis: the Bonferroni divisor (at least 1)."""
    return np.maximum((~np.isnan(sem)).sum(axis=-1, keepdims=True), 1)


def decide(mean: np.ndarray, sem: np.ndarray, df: np.ndarray, alpha: float = 0.05) -> Decided:
    """A fixed run's interval and the verdict read off it, of each comparison (log-scale ``mean``, ``sem``,
    ``df``; NaN sem: no interval): Student-t intervals at α·|S|/K (FCR-adjusted, ``_corrected``), each
    standard error no smaller than its moderated one (``floored``)."""
    mean, df = np.asarray(mean, dtype=float), np.asarray(df, dtype=float)
    sem = floored(np.asarray(sem, dtype=float), df)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = 2 * special.stdtr(df, -np.abs(mean / sem))

    def halfwidths(a: np.ndarray) -> np.ndarray:
        return special.stdtrit(df, 1 - a / 2) * sem

    return _corrected(mean, sem, p, alpha, halfwidths, df)


def decide_sequential(mean: np.ndarray, sem: np.ndarray, df: np.ndarray, alpha: float = 0.05) -> Decided:
    """A budget run's interval and the verdict read off it, of each comparison as it stood at its last look
    (analysis/looks.py: ``df`` is that look's rounds - 1). Each interval is Student's t at α/K times the look's
    share of α (Bonferroni over the run's K comparisons and, by the union bound, over each one's looks), with
    the degrees of freedom the run's variances lend each other (``moderated``). So the chance that any of the
    run's intervals, at any of its looks, misses is at most α, however the rounds were given out and whenever
    the run stopped."""
    mean, df = np.asarray(mean, dtype=float), np.asarray(df, dtype=float)
    sem, dof = moderated(np.asarray(sem, dtype=float), df)
    k = family_size(sem)
    each = alpha / k * looks.shares(df + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = 2 * special.stdtr(dof, -np.abs(mean / sem))
        half = special.stdtrit(dof, 1 - each / 2) * sem
    low, high = mean - half, mean + half
    q = np.minimum(p / (each / alpha), 1.0)
    return Decided(_read_off(low, high), low, high, p, q, sem, np.ones_like(k), dof)


def _corrected(
    mean: np.ndarray,
    sem: np.ndarray,
    p: np.ndarray,
    alpha: float,
    halfwidths: Callable[[np.ndarray], np.ndarray],
    dof: np.ndarray,
) -> Decided:
    """Each interval at α·|S|/K (``halfwidths`` of each comparison's α), S the comparisons they decide: from
    |S| = K downward, since a wider interval only decides fewer, to the largest S its intervals agree with."""
    k = family_size(sem)
    selected = k
    for _ in range(sem.shape[-1] + 1):
        with np.errstate(invalid="ignore"):
            half = halfwidths(np.broadcast_to(alpha * selected / k, sem.shape))
        low, high = mean - half, mean + half
        verdict = _read_off(low, high)
        shrunk = np.minimum(selected, np.maximum((verdict != UNDECIDED).sum(axis=-1, keepdims=True), 1))
        if np.array_equal(shrunk, selected):
            break
        selected = shrunk
    return Decided(verdict, low, high, p, np.minimum(p * k / selected, 1.0), sem, selected, dof)


def _read_off(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """The verdict an interval gives against the band: ≈ inside it, slower or faster wholly below or above ×1."""
    with np.errstate(invalid="ignore"):
        equivalent = (low >= -BAND) & (high <= BAND)
        return np.where(equivalent, EQUIVALENT, np.where(high < 0, SLOWER, np.where(low > 0, FASTER, UNDECIDED)))


def judge(comparisons: Sequence[LogRatio], confidence: float = 0.95, sequential: bool = False) -> list[Judged]:
    """Every comparison of a run at once: one family, one correction, one interval each, the verdict read off
    it; ``sequential``: the run's data decided when it stopped, each comparison read at its last look."""
    if not comparisons:
        return []
    columns = np.array([(c.mean, c.sem, c.df) for c in comparisons], dtype=float).T
    d = (decide_sequential if sequential else decide)(columns[0], columns[1], columns[2], 1 - confidence)
    rows = zip(
        comparisons, columns[0].tolist(), d.low.tolist(), d.high.tolist(), d.p_value.tolist(),
        d.verdict.tolist(), d.q_value.tolist(), d.sem.tolist(), d.dof.tolist(), strict=True,
    )  # fmt: skip
    out = []
    for c, m, low, high, p, verdict, q, sem, dof in rows:
        # math.exp rather than numpy's, which may round the last digit otherwise (analysis/stats.py).
        ratio = Ratio(math.exp(m), math.exp(low), math.exp(high), p) if low == low else _bare(m)
        out.append(Judged(ratio, str(verdict), q, c.note, c.paired, sem, dof, c.n))
    return out


def _bare(mean: float) -> Ratio:
    """A comparison without an interval: its ratio where it has a mean."""
    nan = float("nan")
    return Ratio(math.exp(mean) if mean == mean else nan, nan, nan, nan)


MIN_FOR_PRIOR = 3  # comparisons with a spread needed before their variances say anything about each other


def floored(sem: np.ndarray, df: np.ndarray) -> np.ndarray:
    """Each standard error raised to its moderated value where that is larger (along the last axis: one
    run's comparisons). Variances per round are ``sem² (df + 1)``: a paired comparison's n is df + 1."""
    return moderated(sem, df)[0]


# Degrees of freedom lent where the run's variances agree more than chance allows (Smyth's d0 is infinite):
# enough to make the t quantile the normal one, a finite number for the t functions.
AGREED_DOF = 1000.0


def moderated(sem: np.ndarray, df: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``floored``'s standard errors, and the degrees of freedom each then has: its own plus the prior's d0.
    Under Smyth's model (each comparison's variance drawn from a scaled inverse χ² of d0 degrees of freedom),
    the moderated t, on the shrunk variance, is Student's t with df + d0 degrees of freedom exactly (limma's
    moderated t-test); a variance no smaller than the shrunk one only widens that interval. Where the run
    has too few comparisons for a prior, each keeps its own."""
    s2 = sem * sem * (df + 1)
    d0, s0 = _prior(s2, df)
    with np.errstate(invalid="ignore", divide="ignore"):
        shrunk = np.where(np.isinf(d0), s0, (d0 * s0 + df * s2) / (d0 + df))
        lifted = np.sqrt(np.maximum(s2, shrunk) / (df + 1))
        lent = np.where(np.isnan(d0), 0.0, np.minimum(d0, AGREED_DOF))
    unknown = np.isnan(sem) | np.isnan(shrunk)
    return np.where(unknown, sem, lifted), np.where(unknown, df, df + lent)


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
# Every verdict is read off its interval alone, corrected over the run's comparisons (the module's docstring).
LEGEND = (
    "↓ slower, ↑ faster (the whole interval below or above ×1), ≈ (the whole interval inside ±5%), ? undecided; "
    "intervals corrected over the run's comparisons"
)
# A budget run's intervals also hold whenever the run stopped.
SEQUENTIAL_LEGEND = LEGEND + ", valid whenever the run stops"


def legend(sequential: bool) -> str:
    return SEQUENTIAL_LEGEND if sequential else LEGEND


def material(r: Ratio) -> bool:
    """At least MATERIAL away from ×1 (the point estimate)."""
    return r.ratio == r.ratio and r.ratio > 0 and abs(math.log(r.ratio)) >= BAND


# The ratios a verdict is read against: the band's edges and ×1.
THRESHOLDS = (1 / (1 + MATERIAL), 1.0, 1 + MATERIAL)


def bound_text(x: float, least: int = 2) -> str:
    """An interval's bound with ``least`` decimals, or more where fewer would put it on the other side of, or
    onto, a threshold (×0.998 is not "1.00"): so the verdict follows from the printed interval too."""
    for places in range(least, 7):
        text = f"{x:.{places}f}"
        printed = float(text)
        if all((printed < t) == (x < t) and (printed > t) == (x > t) for t in THRESHOLDS):
            return text
    return text


def bounds_text(low: float, high: float, least: int = 2, sep: str = "-") -> str:
    """``0.78-0.99``, ``0.66-0.998``: an interval as the verdict was read off it (``bound_text``)."""
    return f"{bound_text(low, least)}{sep}{bound_text(high, least)}"


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
    interval = f"×{r.ratio:.2f}, {level_text(confidence)} {bounds_text(r.ci_low, r.ci_high)}"
    if verdict in DIFFERENT:
        return f"{100 * (r.ratio - 1):+.0f}% ({interval})"
    return f"{'≈' if verdict == EQUIVALENT else 'undecided'} ({interval})"
