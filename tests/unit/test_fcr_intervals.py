"""The interval printed beside a verdict is the one it was decided on (issue 53's second defect): FCR-adjusted
intervals (Benjamini and Yekutieli 2005) for a fixed run, confidence sequences for a budget run, and the
verdict read off the interval and the band by one rule, which docs/explanation/statistics.md states.

The simulations are vectorised over a thousand seeded runs and take about a second in all.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

from layerbench.analysis.stats import LogRatio
from layerbench.analysis.verdicts import (
    BAND,
    DIFFERENT,
    EQUIVALENT,
    FASTER,
    SLOWER,
    UNDECIDED,
    decide,
    floored,
    judge,
    shown,
)
from layerbench.report.terminal import plain, show_json
from layerbench.report.view import view
from layerbench.spec.feasibility import HostCaps
from tests import simulated_runs
from tests.unit import test_findings

ALPHA = 0.05
RUNS = 1000


def rule(low: float, high: float) -> str:
    """The verdict from an interval (ratios) and the band alone, as the docs state it."""
    if not (low == low and high == high):
        return UNDECIDED
    if low >= 1 / 1.05 and high <= 1.05:
        return EQUIVALENT
    return SLOWER if high < 1 else FASTER if low > 1 else UNDECIDED


INTERVAL = re.compile(r"^(\S+) \(×[\d.]+, [\d.]+% CI ([\d.]+)-([\d.]+)\)$")

comparison = st.builds(
    lambda n, mean, sem, spread: LogRatio(n, mean, sem if spread else math.nan, n - 1.0, "" if spread else "one"),
    st.integers(2, 30),
    st.floats(-0.6, 0.6),
    st.floats(1e-4, 0.3),
    st.booleans(),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(comparison, min_size=1, max_size=30), st.booleans(), st.sampled_from([0.95, 0.99375]))
def test_every_verdict_follows_from_its_printed_interval_and_the_band(
    run: list[LogRatio], sequential: bool, confidence: float
) -> None:
    for j in judge(run, confidence, sequential):
        r = j.ratio
        assert j.verdict == rule(r.ci_low, r.ci_high)  # the numbers show --json gives
        as_json = plain(j)["ratio"]
        assert j.verdict == rule(*(math.nan if v is None else v for v in (as_json["ci_low"], as_json["ci_high"])))
        if r.ci_low == r.ci_low and math.isfinite(r.ci_high):
            text = shown(j.verdict, r, confidence)
            found = INTERVAL.match(text)
            assert found, text
            # The printed bounds keep their side of ×1 and of the band's edges (bound_text): the rule holds on them.
            word = {"≈": EQUIVALENT, "undecided": UNDECIDED}.get(found[1], SLOWER if found[1][0] == "-" else FASTER)
            assert word == j.verdict == rule(float(found[2]), float(found[3])), text
            assert r.ci_low <= r.ratio <= r.ci_high
            # q below α exactly where a t-interval excludes ×1 (a sequence's boundary is found by bisection).
            if not sequential:
                assert (j.q_value < 1 - confidence) == (r.ci_high < 1 or r.ci_low > 1)
        else:
            assert j.verdict == UNDECIDED


def test_the_defect_of_issue_53_cannot_recur() -> None:
    # "undecided on RR (×0.71, 95% CI 0.52-0.96)": fifteen comparisons, this one at p ≈ 0.03 on its own.
    t = stats.t.isf(0.015, 3)
    run = [LogRatio(4, math.log(0.71), -math.log(0.71) / t, 3.0)] + [LogRatio(4, 0.0, 0.05, 3.0)] * 14
    j = judge(run)[0]
    assert j.verdict == UNDECIDED and j.ratio.ci_high > 1  # corrected, its interval now crosses ×1 too
    assert judge(run[:1])[0].verdict == SLOWER  # alone, the plain interval is the corrected one


def simulated(
    rounds: int, shared: bool, null: bool, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """RUNS runs of simulated_runs' twenty comparisons (this machine kind's noise, CPU-bound ones, effects of
    0, ±3%, ±10%, ±30%; ``null``: all 0, where uncorrected intervals would name one in most runs) at a fixed
    count of rounds: true effects, and each comparison's verdict and interval. ``shared``: ten comparisons
    against each reference cell, as in a run; else each its own reference."""
    rng = np.random.default_rng(seed)
    effects, noise = simulated_runs._draw(rng, RUNS)
    effects = np.zeros_like(effects) if null else effects
    own = math.sqrt(1 - simulated_runs.RHO)
    logs = []
    for _ in range(rounds):
        if shared:
            logs.append(simulated_runs._round(rng, effects, noise))
        else:
            reference = rng.normal(0, 1, effects.shape) * simulated_runs.SIGMA * own
            logs.append(effects + rng.normal(0, 1, effects.shape) * noise * own - reference)
    d = np.stack(logs, axis=-1)
    mean, sem = d.mean(axis=-1), d.std(axis=-1, ddof=1) / math.sqrt(rounds)
    decided = decide(mean, sem, np.full_like(mean, rounds - 1.0), ALPHA)
    return effects, decided.verdict, decided.low, decided.high


def slack(shares: np.ndarray) -> float:
    """Three standard errors of a mean of per-run shares: the simulation's own error, computed."""
    return 3 * float(shares.std(ddof=1)) / math.sqrt(len(shares))


@pytest.mark.parametrize("null", [False, True], ids=["mixed", "null"])
@pytest.mark.parametrize("shared", [False, True], ids=["independent", "shared-reference"])
@pytest.mark.parametrize("rounds", [3, 4, 5, 8, 20])
def test_decided_intervals_miss_and_verdicts_are_wrong_in_at_most_five_percent(
    rounds: int, shared: bool, null: bool
) -> None:
    effects, verdict, low, high = simulated(rounds, shared, null, seed=rounds * 10 + shared + 2 * null)
    decided = verdict != UNDECIDED
    missed = decided & ((low > effects) | (high < effects))
    wrong = decided & (
        (np.isin(verdict, DIFFERENT) & (effects == 0))
        | ((verdict == SLOWER) & (effects > 0))
        | ((verdict == FASTER) & (effects < 0))
        | ((verdict == EQUIVALENT) & (np.abs(effects) >= BAND))
    )
    assert not (wrong & ~missed).any()  # a wrong verdict needs a missed interval
    per_run = np.maximum(decided.sum(axis=-1), 1)
    false_coverage = missed.sum(axis=-1) / per_run
    wrong_share = wrong.sum(axis=-1) / per_run
    assert false_coverage.mean() <= ALPHA + slack(false_coverage)
    assert wrong_share.mean() <= ALPHA + slack(wrong_share)
    if rounds >= 4 and not null:
        assert decided.sum(axis=-1).mean() > 3  # not vacuous


def benjamini_hochberg_verdicts(mean: np.ndarray, sem: np.ndarray, df: np.ndarray) -> np.ndarray:
    """The rule FCR intervals replaced: a difference at BH q < α and at least 5%, ≈ by TOST under BH at α/2."""
    sem = floored(sem, df)
    p = 2 * special.stdtr(df, -np.abs(mean / sem))
    p_eq = np.maximum(special.stdtr(df, -(mean + BAND) / sem), special.stdtr(df, (mean - BAND) / sem))
    different = (stats.false_discovery_control(p, axis=-1) < ALPHA) & (np.abs(mean) >= BAND)
    equivalent = (stats.false_discovery_control(p_eq, axis=-1) < ALPHA / 2) & ~different
    return np.where(different, np.where(mean < 0, SLOWER, FASTER), np.where(equivalent, EQUIVALENT, UNDECIDED))


# Mean comparisons decided of twenty, by Benjamini-Hochberg's rule and by FCR intervals, as
# docs/explanation/statistics.md quotes them (seeded: the same figures every time). At the presets' four
# rounds no verdict moves (only the intervals widen); from eight on more are decided, ≈ among them.
DECIDED = {3: (0.82, 0.82), 4: (5.13, 5.13), 8: (10.29, 10.45), 20: (12.43, 16.00)}


@pytest.mark.parametrize("rounds", sorted(DECIDED))
def test_what_the_fix_costs_in_decisions_of_quick_like_runs(rounds: int) -> None:
    rng = np.random.default_rng(441)
    effects, noise = simulated_runs._draw(rng, RUNS)
    d = np.stack([simulated_runs._round(rng, effects, noise) for _ in range(rounds)], axis=-1)
    mean, sem, df = d.mean(axis=-1), d.std(axis=-1, ddof=1) / math.sqrt(rounds), np.full(effects.shape, rounds - 1.0)
    before = (benjamini_hochberg_verdicts(mean, sem, df) != UNDECIDED).sum(axis=-1).mean()
    after = (decide(mean, sem, df).verdict != UNDECIDED).sum(axis=-1).mean()
    assert (before, after) == pytest.approx(DECIDED[rounds], abs=0.01)


PART = re.compile(r"(\S+) on \S+ \(×[\d.]+, [\d.]+% CI ([\d.]+)-([\d.]+)\)")
# What each layer costs in a stored run, chosen so that intervals fall on every side of ×1 and of the band.
COSTS = [
    {"raw": 1.0, "host-dir": 0.8, "volume": 0.8 * 0.99, "writable-layer": 0.8 * 0.5},
    {"raw": 1.0, "host-dir": 0.998, "volume": 0.998 * 1.002, "writable-layer": 0.998 * 0.955},
    {"raw": 1.0, "host-dir": 1.05, "volume": 1.05 * 0.952, "writable-layer": 1.05 * 1.04},
]


@pytest.mark.parametrize("cost", COSTS)
def test_show_json_and_the_findings_text_give_verdicts_their_intervals_derive(
    tmp_path: Path, full_caps: HostCaps, cost: dict[str, float]
) -> None:
    v = view(test_findings.stored_run(tmp_path, full_caps, rounds=4, cost=lambda s: cost[s.placement.kind]))
    listed = show_json(v)["findings"]
    assert listed
    for f in listed:
        assert f["verdict"] == rule(f["ratio"]["ci_low"], f["ratio"]["ci_high"]), f
    parts = [m for line in v.finding_lines for m in PART.findall(line)]
    assert len(parts) == len(listed)
    for word, low, high in parts:
        verdict = {"≈": EQUIVALENT, "undecided": UNDECIDED}.get(word, SLOWER if word[0] == "-" else FASTER)
        assert verdict == rule(float(low), float(high)), (word, low, high)
