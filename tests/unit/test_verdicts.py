"""Three verdicts, each shown: different, ≈ or undecided, corrected over a run's comparisons (issue 29).

The simulations are vectorised over runs (a thousand runs of twenty comparisons are one array), seeded,
and take milliseconds; the edge cases are constructed data, one test each.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from layerbench.analysis import findings, overhead
from layerbench.analysis.stats import (
    LogRatio,
    log_ratio,
    paired_logs,
    paired_ratio,
    ratio,
    t_quantile,
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
    # ≈ only where the interval shown lies inside the band, computed here on its own from the t quantile.
    half = t_quantile(0.95, rounds - 1) * sem
    inside = (mean - half > -BAND) & (mean + half < BAND)
    equivalent = verdict == EQUIVALENT
    assert not (equivalent & ~inside).any()
    if rounds >= 4 and noise <= 0.01:
        assert equivalent.mean() > 0.5  # not vacuous: a steady host with rounds enough shows ≈


@pytest.mark.parametrize(("rounds", "noise"), SCENARIOS)
def test_a_true_ten_percent_cost_is_slower_or_undecided_never_equivalent(rounds: int, noise: float) -> None:
    _, _, verdict = simulated(rounds, noise, 0.9, seed=7 + rounds * 100 + int(noise * 1000))
    assert set(np.unique(verdict)) <= {SLOWER, UNDECIDED}
    if rounds >= 5 and noise <= 0.03:
        assert (verdict == SLOWER).mean() > 0.9  # and seen, where rounds are enough


def test_the_simulation_is_fast() -> None:
    # The whole grid above: 2 x 12 scenarios of 1,000 runs each, well under a second.
    import time

    started = time.perf_counter()
    for r, s in SCENARIOS:
        simulated(r, s, 1.0, seed=1)
    assert time.perf_counter() - started < 2.0


def test_with_nothing_equivalent_the_named_differences_are_benjamini_hochbergs_discoveries() -> None:
    # Intervals at α·|S|/K for the largest S they agree with reduce to BH when no ≈ is decided (every mean
    # outside the band, so no interval lies inside it): |S| is BH's count, and the interval excludes ×1
    # exactly when the p-value is below α·|S|/K.
    rng = np.random.default_rng(5)
    mean = rng.choice([-1, 1], size=(500, 20)) * rng.uniform(BAND * 1.01, 0.4, size=(500, 20))
    sem, df = rng.uniform(0.01, 0.2, size=(500, 20)), np.full((500, 20), 3.0)
    d = decide(mean, sem, df)
    named = np.isin(d.verdict, DIFFERENT)
    assert (named == (stats.false_discovery_control(d.p_value, axis=-1) < 0.05)).all()
    assert 0 < named.mean() < 1  # not vacuous: some named, some not
    assert (d.selected[:, 0] == np.maximum(named.sum(axis=-1), 1)).all()
    assert (named == (d.q_value < 0.05)).all()  # q below α exactly where the interval excludes ×1


def test_one_comparison_alone_is_shown_with_its_plain_t_interval() -> None:
    one = LogRatio(6, math.log(0.9), 0.04, 5.0)
    (j,) = judge([one])
    assert j.ratio == log_ratio(one) and j.q_value == pytest.approx(j.ratio.p_value)


def test_a_difference_must_survive_the_correction_and_is_named_by_its_interval_whatever_its_size() -> None:
    # Twenty comparisons: one at p = 0.03 on its own (×0.80), one decisive (×0.60), eighteen nothing.
    t03 = stats.t.isf(0.015, 3)
    lone = LogRatio(4, math.log(0.8), -math.log(0.8) / t03, 3.0)
    strong = LogRatio(8, math.log(0.6), 0.03, 7.0)
    nothing = [LogRatio(4, 0.0, 0.05, 3.0) for _ in range(18)]
    judged = judge([lone, strong, *nothing])
    assert log_ratio(lone).p_value == pytest.approx(0.03)
    assert [j.verdict for j in judged[:2]] == [UNDECIDED, SLOWER]
    assert {j.verdict for j in judged[2:]} == {UNDECIDED}
    assert judge([lone])[0].verdict == SLOWER  # alone, the same p is a discovery
    assert judge([LogRatio(4, math.log(1.03), 0.001, 3.0)])[0].verdict == EQUIVALENT  # inside the band: ≈ first
    assert judge([LogRatio(4, math.log(0.94), 0.001, 3.0)])[0].verdict == SLOWER
    assert judge([LogRatio(4, math.log(0.97), 0.01, 3.0)])[0].verdict == UNDECIDED  # across ×1, out of the band
    # -4%, its interval (×0.94-0.98) below ×1 but not inside the band: named, as the interval says (the rule
    # "significant and at least 5%" printed "undecided" beside it, issue 53).
    small = judge([LogRatio(4, math.log(0.96), 0.005, 3.0)])[0]
    assert small.verdict == SLOWER and small.ratio.ci_high < 1 and small.ratio.ci_low < 1 / 1.05


def test_a_spread_far_below_the_runs_others_is_lifted_to_theirs_so_luck_shows_nothing() -> None:
    # Twenty comparisons on a host whose rounds spread about 3%; one came out at 0.1% by luck, its mean
    # 2% off. Taken at face value it would be ≈ (its interval 0.97-0.99); lifted to the run's spread it is
    # undecided, and its interval as shown says so.
    typical = [LogRatio(4, 0.0, 0.03 * (1 + 0.1 * i) / 2, 3.0) for i in range(19)]
    lucky = LogRatio(4, math.log(0.98), 0.0005, 3.0)
    assert judge([lucky])[0].verdict == EQUIVALENT
    j = judge([lucky, *typical])[0]
    assert j.verdict == UNDECIDED and j.ratio.ci_low < 1 / 1.05
    # A spread larger than the others' is its own: the floor never narrows an interval. Nothing is decided,
    # so every interval is at Bonferroni's level (|S| = 1 of K = 20).
    wide = LogRatio(4, 0.0, 0.2, 3.0)
    judged = judge([wide, *typical])
    assert {j.verdict for j in judged} == {UNDECIDED}
    assert judged[0].ratio == log_ratio(wide, 1 - 0.05 / 20)


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


def test_a_precision_run_shows_and_decides_every_comparison_at_its_one_level(
    tmp_path: Path, full_caps: HostCaps
) -> None:
    data = test_findings.stored_run(tmp_path, full_caps, rounds=4, spec=PRECISION)
    results = overhead.of_run(data)
    found = findings.of_run(data, results)
    level = 1 - 0.05 / 8  # Bonferroni over eight looks (analysis/precision.py)
    host_dir = next(f for f in found if f.subject.endswith("native/host-dir"))
    in_table = next(r for r in results if r.stack_label == host_dir.subject)
    assert host_dir.confidence == pytest.approx(level)
    assert in_table.ratio == host_dir.ratio  # one comparison, one interval: the table's and the finding's
    assert in_table.verdict == host_dir.verdict
    assert "99.4% CI" in findings.summary_lines(found)[0]
    # A p-value of 1% is significant at 95% but not at the run's level: the verdict follows the interval.
    one = LogRatio(4, math.log(0.8), -math.log(0.8) / stats.t.isf(0.005, 3), 3.0)
    assert judge([one], 0.95)[0].verdict == SLOWER and judge([one], level)[0].verdict == UNDECIDED


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
