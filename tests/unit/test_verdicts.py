"""Three verdicts, each shown: different, ≈ or undecided, read off one interval per comparison, corrected over a
run's comparisons and valid at any stop (issues 29 and 53).

The simulations are vectorised over runs (a thousand runs of twenty comparisons are one array), seeded,
and take milliseconds; the edge cases are constructed data, one test each.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from layerbench.analysis import anytime, findings, overhead
from layerbench.analysis.stats import (
    LogRatio,
    log_ratio,
    paired_logs,
    paired_ratio,
    ratio,
    welch_logs,
)
from layerbench.analysis.verdicts import (
    BAND,
    DIFFERENT,
    EQUIVALENT,
    FASTER,
    SLOWER,
    UNDECIDED,
    decide,
    judge,
    shown,
)
from layerbench.spec.feasibility import HostCaps
from tests.unit import test_findings

RUNS = 1000
# A 20-comparison experiment: two workloads, each with one reference cell and ten cells judged against it
# (the shared reference correlates their comparisons, as a run's do), every round drifting all cells alike.
WORKLOADS, SUBJECTS = 2, 10
# Per-trial noise: zram's ±1-3% (README, `quick`), a quiet disk's 5%; rounds as trial rules allow them.
NOISE = (0.01, 0.03, 0.05)
ROUNDS = (3, 4, 5, 8)


def simulated(rounds: int, noise: float, effect: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """RUNS runs of the experiment: per comparison the paired log ratio's mean and standard error, and the
    verdicts ``decide`` gives them (shape RUNS x 20)."""
    rng = np.random.default_rng(seed)
    drift = rng.normal(0, 0.2, size=(RUNS, 1, 1, rounds))  # the machine's speed, round by round
    reference = drift + rng.normal(0, noise, size=(RUNS, WORKLOADS, 1, rounds))
    subject = drift + math.log(effect) + rng.normal(0, noise, size=(RUNS, WORKLOADS, SUBJECTS, rounds))
    logs = (subject - reference).reshape(RUNS, WORKLOADS * SUBJECTS, rounds)
    mean, sem = logs.mean(axis=-1), logs.std(axis=-1, ddof=1) / math.sqrt(rounds)
    return mean, sem, decide(mean, sem, np.full_like(mean, rounds - 1)).verdict


SCENARIOS = [(r, s) for r in ROUNDS for s in NOISE]


@pytest.mark.parametrize(("rounds", "noise"), SCENARIOS)
def test_a_thousand_a_a_runs_name_a_difference_in_at_most_five_percent(rounds: int, noise: float) -> None:
    mean, sem, verdict = simulated(rounds, noise, 1.0, seed=rounds * 100 + int(noise * 1000))
    assert verdict.shape == (RUNS, 20)
    naming = np.isin(verdict, DIFFERENT).any(axis=-1)
    assert naming.mean() <= 0.05
    # ≈ only where the interval lies inside the band, the interval computed here on its own: the sequence's
    # boundary at 5% over the 20 comparisons, times the standard error (the floor only widens it).
    half = anytime.boundary(rounds, 0.05 / 20) * sem
    inside = (mean - half > -BAND) & (mean + half < BAND)
    equivalent = verdict == EQUIVALENT
    assert not (equivalent & ~inside).any()
    if rounds >= 8 and noise <= 0.01:
        assert equivalent.mean() > 0.5  # not vacuous: a steady host with rounds enough shows ≈


@pytest.mark.parametrize(("rounds", "noise"), SCENARIOS)
def test_a_true_ten_percent_cost_is_slower_or_undecided_never_equivalent(rounds: int, noise: float) -> None:
    _, _, verdict = simulated(rounds, noise, 0.9, seed=7 + rounds * 100 + int(noise * 1000))
    assert set(np.unique(verdict)) <= {SLOWER, UNDECIDED}
    if rounds >= 8 and noise <= 0.01:
        assert (verdict == SLOWER).mean() > 0.9  # and seen, where rounds are enough


def test_the_simulation_is_fast() -> None:
    # The whole grid above: 2 x 12 scenarios of 1,000 runs each, well under a second.
    import time

    started = time.perf_counter()
    for r, s in SCENARIOS:
        simulated(r, s, 1.0, seed=1)
    assert time.perf_counter() - started < 2.0


def rule(low: float, high: float) -> str:
    """The verdict from an interval and the band alone, as docs/explanation/statistics.md states it."""
    if low >= 1 / 1.05 and high <= 1.05:
        return EQUIVALENT
    return SLOWER if high < 1 else FASTER if low > 1 else UNDECIDED


def test_each_verdict_follows_from_its_interval_and_the_band() -> None:
    rng = np.random.default_rng(3)
    rounds, means, sems = rng.integers(2, 40, 400), rng.normal(0, 0.15, 400), rng.uniform(0.002, 0.08, 400)
    comparisons = [
        LogRatio(int(n), float(m), float(s), float(n - 1)) for n, m, s in zip(rounds, means, sems, strict=True)
    ]
    for j in judge(comparisons):
        r = j.ratio
        assert j.verdict == (rule(r.ci_low, r.ci_high) if r.ci_low == r.ci_low else UNDECIDED)
        assert r.ci_low <= r.ratio <= r.ci_high


def test_the_interval_is_corrected_over_the_run_s_comparisons() -> None:
    # ×0.80 over eight rounds: decided alone, undecided among forty comparisons whose intervals must all hold.
    lone = LogRatio(8, math.log(0.8), 0.03, 7.0)
    nothing = [LogRatio(8, 0.0, 0.03, 7.0) for _ in range(39)]
    alone, crowded = judge([lone])[0], judge([lone, *nothing])[0]
    assert alone.verdict == SLOWER and crowded.ratio.ci_high > alone.ratio.ci_high
    assert crowded.verdict == rule(crowded.ratio.ci_low, crowded.ratio.ci_high)
    assert alone.q_value < 0.05 <= crowded.q_value or crowded.verdict == SLOWER
    assert judge([LogRatio(20, math.log(1.03), 0.002, 19.0)])[0].verdict == EQUIVALENT  # inside the band
    assert judge([LogRatio(20, math.log(0.90), 0.002, 19.0)])[0].verdict == SLOWER  # below ×1, beyond the band


def test_two_rounds_bound_nothing_yet() -> None:
    (j,) = judge([LogRatio(2, math.log(0.5), 0.01, 1.0)])
    assert j.verdict == UNDECIDED and math.isinf(j.ratio.ci_high)
    assert "too few rounds yet" in shown(j.verdict, j.ratio)


def test_a_spread_far_below_the_runs_others_is_lifted_to_theirs_so_luck_shows_nothing() -> None:
    # Twenty comparisons on a host whose rounds spread about 3%; one came out at 0.1% by luck, its mean
    # 2% off. Taken at face value it would be ≈ (its interval 0.97-0.99); lifted to the run's spread it is
    # undecided, and its interval as shown says so.
    typical = [LogRatio(4, 0.0, 0.03 * (1 + 0.1 * i) / 2, 3.0) for i in range(19)]
    lucky = LogRatio(4, math.log(0.98), 0.0005, 3.0)
    assert judge([lucky])[0].verdict == EQUIVALENT
    j = judge([lucky, *typical])[0]
    assert j.verdict == UNDECIDED and j.ratio.ci_low < 1 / 1.05
    # A spread larger than the others' is its own: the floor never narrows an interval.
    wide = LogRatio(4, 0.0, 0.2, 3.0)
    half = anytime.boundary(4, 0.05 / 20) * 0.2
    assert judge([wide, *typical])[0].ratio.ci_high == pytest.approx(math.exp(half))


def test_identical_per_round_ratios_have_no_spread_and_decide_nothing() -> None:
    # Two rounds whose ratios agree to the last digit: a t statistic over rounding is any number at all.
    cell, base = {0: 50.0, 1: 60.0}, {0: 100.0, 1: 120.0}
    r = paired_ratio(cell, base)
    assert r.ratio == pytest.approx(0.5) and math.isnan(r.p_value) and math.isnan(r.ci_low)
    logs = paired_logs(cell, base)
    assert "the same ratio in all 2 rounds" in logs.note
    (j,) = judge([logs])
    assert j.verdict == UNDECIDED and not r.significant


def test_a_value_not_above_zero_is_not_called_one_round(tmp_path: Path, full_caps: HostCaps) -> None:
    logs = paired_logs({0: 10.0, 1: 0.0, 2: 11.0}, {0: 10.0, 1: 10.0, 2: 10.0})
    assert logs.note == "a value not above zero: no ratio in that round"
    data = test_findings.stored_run(tmp_path, full_caps, rounds=3)
    writable = next(c.cell_id for c in data.cells if c.stack.placement.kind == "writable-layer")
    second = next(t.id for t in data.trials if t.cell_id == writable and t.repetition == 1)
    data.samples.loc[(data.samples["cell_id"] == writable) & (data.samples["trial_id"] == second), "value"] = 0.0
    found = findings.of_run(data, [])
    (f,) = [f for f in found if f.subject.endswith("writable-layer")]
    assert f.verdict == UNDECIDED and f.note.startswith("a value not above zero")
    line = next(line for line in findings.summary_lines(found) if "writable-layer vs" in line)
    assert "one round" not in line and "a value not above zero" in line


def test_p_value_and_interval_come_from_one_statistic_so_they_agree() -> None:
    # Fieller's interval and Welch's p-value can disagree about one cell: here p < 0.05 while Fieller's
    # 95% interval holds ×1. What a verdict shows is one t statistic on the logs: they agree by construction.
    cell, base = [91.9, 98.3, 98.7, 104.3], [109.7, 110.8, 102.8]
    fieller = ratio(cell, base)
    assert (fieller.p_value < 0.05) != (fieller.ci_low > 1 or fieller.ci_high < 1)
    rng = np.random.default_rng(11)
    for _ in range(500):
        a, b = rng.lognormal(0, 0.1, rng.integers(2, 6)), rng.lognormal(0.05, 0.1, rng.integers(2, 6))
        r = log_ratio(welch_logs(a, b))
        assert (r.p_value < 0.05) == (r.ci_low > 1 or r.ci_high < 1)
        want = stats.ttest_ind(np.log(a), np.log(b), equal_var=False).pvalue
        assert r.p_value == pytest.approx(want, rel=1e-9)


PRECISION = test_findings.SPEC + "trials: {precision: 0.05, min_repetitions: 3, repetitions: 10}\n"


def test_a_precision_run_shows_and_decides_every_comparison_at_95_percent_with_one_interval(
    tmp_path: Path, full_caps: HostCaps
) -> None:
    data = test_findings.stored_run(tmp_path, full_caps, rounds=4, spec=PRECISION)
    results = overhead.of_run(data)
    found = findings.of_run(data, results)
    host_dir = next(f for f in found if f.subject.endswith("native/host-dir"))
    in_table = next(r for r in results if r.stack_label == host_dir.subject)
    assert host_dir.confidence == 0.95  # the sequences hold at any stop: looking owes no correction
    assert in_table.ratio == host_dir.ratio  # one comparison, one interval: the table's and the finding's
    assert in_table.verdict == host_dir.verdict
    assert "95% CI" in findings.summary_lines(found)[0]


def test_the_results_table_and_the_findings_share_one_interval_per_comparison(
    tmp_path: Path, full_caps: HostCaps
) -> None:
    data = test_findings.stored_run(tmp_path, full_caps, rounds=4)
    results = {r.stack_label: r for r in overhead.of_run(data)}
    for f in findings.of_run(data, list(results.values())):
        r = results[f.subject]
        if r.ratio.ratio == r.ratio.ratio and f.reference.endswith("raw"):
            assert (r.ratio, r.verdict) == (f.ratio, f.verdict)
    assert {r.verdict for r in results.values()} - {""} <= {SLOWER, FASTER, EQUIVALENT, UNDECIDED}


def test_compare_gives_each_cell_a_verdict_corrected_over_the_cells_compared(
    tmp_path: Path, full_caps: HostCaps
) -> None:
    from layerbench.report.terminal import comparison_json, comparison_table
    from layerbench.report.view import comparison

    a = test_findings.stored_run(tmp_path / "a", full_caps, rounds=4)
    b = test_findings.stored_run(tmp_path / "b", full_caps, rounds=4)
    c = comparison(a, b)
    assert len(c.cells) == len(a.cells)
    # The same numbers twice, but each run's rounds drift ±40%: unpaired, that is no evidence of sameness.
    assert {r.verdict for r in c.cells} == {UNDECIDED}
    assert all(r.ratio.ci_low < 1 / 1.05 and r.ratio.ci_high > 1.05 for r in c.cells)
    assert {r["verdict"] for r in comparison_json(c)["cells"]} == {UNDECIDED}
    assert comparison_table(c.cells, c.a, c.b).columns[-1].header == "verdict"
