from __future__ import annotations

import dataclasses
import math
import shutil
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from layerbench.analysis.stats import (
    cell_values,
    log_ratio,
    log_ratios,
    paired_ratio,
    ratio,
    ratios,
    ratios_of,
    runs_of,
    summaries,
    summarize,
    summary_frame,
    t_quantile,
    welch_logs,
    welch_logs_of,
)
from layerbench.records.info import TrialInfo
from layerbench.records.sample import Sample
from layerbench.records.trial import TrialRecord
from layerbench.store.db import CellRow, Store


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


def test_identical_samples_give_a_ratio_of_one_inside_its_interval() -> None:
    values = [980.0, 1010.0, 1005.0, 995.0]
    r = ratio(values, values)
    assert r.ratio == 1.0 and r.ci_low < 1.0 < r.ci_high


def store_frame(tmp_path: Path, trials: dict[str, list[list[Sample]]]) -> pd.DataFrame:
    """A samples frame read back from a real Store; cell "base" is every cell's baseline."""
    store = Store.open(tmp_path / "r.db")
    run_id = store.new_run("t", "{}", "d", {})
    config = '{"workload": {"rw": "randrw", "bs": 4096}}'
    store.add_cells(run_id, [CellRow(c, c, c, "mix", config, c == "base", "base") for c in trials])
    for cell, reps in trials.items():
        for rep, samples in enumerate(reps):
            now = time.time()
            store.record_trial(
                run_id, TrialRecord(cell, rep, "ok", None, now, now, ["fio"], "{}", "", TrialInfo(), samples)
            )
    frame = store.samples_frame(run_id)
    store.close()
    return frame


def mixed_trial(read: float, write: float) -> list[Sample]:
    """Two jobs of a job file, both reading and writing: a trial's total sums the jobs."""
    return [
        Sample("iops", read / 2, "IO/s", "read", "job1"),
        Sample("iops", read / 2, "IO/s", "read", "job2"),
        Sample("iops", write, "IO/s", "write", "job1"),
        Sample("iops", 0.0, "IO/s", "write", "job2"),
        Sample("clat_mean", 50_000.0, "ns", "read", "job1"),
    ]


def test_summary_frame_per_direction_sums_jobs_and_matches_scipy(tmp_path: Path) -> None:
    reads, writes = [1000.0, 1040.0, 990.0], [300.0, 310.0, 305.0]
    frame = store_frame(tmp_path, {"base": [mixed_trial(r, w) for r, w in zip(reads, writes, strict=True)]})
    table = summary_frame(frame, ["iops"]).set_index("direction")
    assert list(table["n"]) == [3, 3] and list(table["metric"]) == ["iops", "iops"]
    low, high = stats.t.interval(0.95, 2, loc=np.mean(reads), scale=stats.sem(reads))
    assert math.isclose(table.loc["read", "mean"], np.mean(reads))
    assert math.isclose(table.loc["read", "ci_low"], low) and math.isclose(table.loc["read", "ci_high"], high)
    assert math.isclose(table.loc["write", "median"], 305.0)


def test_summary_frame_of_one_trial_has_nan_interval(tmp_path: Path) -> None:
    frame = store_frame(tmp_path, {"base": [mixed_trial(1000.0, 300.0)]})
    row = summary_frame(frame, ["iops"]).iloc[0]
    assert row["n"] == 1 and math.isnan(row["ci_low"]) and math.isnan(row["ci_high"]) and math.isnan(row["std"])


def test_ratios_to_the_baseline_per_direction(tmp_path: Path) -> None:
    base = [mixed_trial(r, 300.0 + i) for i, r in enumerate([1000.0, 1030.0, 985.0, 1010.0])]
    same = [mixed_trial(r, 300.0 + i) for i, r in enumerate([1000.0, 1030.0, 985.0, 1010.0])]
    half = [mixed_trial(r / 2, 150.0 + i) for i, r in enumerate([1020.0, 990.0, 1005.0, 1000.0])]
    single = [mixed_trial(700.0, 200.0)]
    frame = store_frame(tmp_path, {"base": base, "same": same, "half": half, "single": single})
    table = ratios(frame, "iops", "read").set_index("cell_id")
    assert table.loc["same", "ratio"] == 1.0
    assert table.loc["same", "ci_low"] < 1.0 < table.loc["same", "ci_high"]
    assert abs(table.loc["half", "ratio"] - 0.5) < 0.02
    assert table.loc["half", "ci_low"] < 0.5 < table.loc["half", "ci_high"] < 1.0
    assert math.isclose(table.loc["single", "ratio"], 700.0 / 1006.25) and math.isnan(table.loc["single", "ci_low"])
    assert (table.loc["half", "n"], table.loc["half", "n_baseline"]) == (4, 4)


def test_ratio_is_nan_when_the_baseline_has_no_results(tmp_path: Path) -> None:
    frame = store_frame(tmp_path, {"base": [], "other": [mixed_trial(1000.0, 300.0)] * 2})
    row = ratios(frame, "iops", "read").set_index("cell_id").loc["other"]
    assert row["n_baseline"] == 0 and math.isnan(row["ratio"]) and math.isnan(row["ci_low"])


def test_the_t_distribution_from_scipy_special_gives_scipy_stats_numbers() -> None:
    # summarize and ratio take t from scipy.special's ufuncs for speed; they must agree with scipy.stats.
    rng = np.random.default_rng(11)
    for n_a, n_b in [(2, 2), (3, 5), (10, 4), (30, 30)]:
        a, b = rng.normal(100, 7, n_a), rng.normal(90, 15, n_b)
        s = summarize(a)
        low, high = stats.t.interval(0.95, n_a - 1, loc=a.mean(), scale=stats.sem(a))
        assert math.isclose(s.ci_low, low, rel_tol=1e-9) and math.isclose(s.ci_high, high, rel_tol=1e-9)
        welch = stats.ttest_ind(a, b, equal_var=False).pvalue
        assert math.isclose(ratio(a, b).p_value, welch, rel_tol=1e-9)
        assert math.isclose(t_quantile(0.99, n_a - 1), stats.t.ppf(0.995, n_a - 1), rel_tol=1e-9)


def test_paired_ratio_matches_a_one_sample_t_test_on_the_log_ratios() -> None:
    cell = {0: 105.0, 1: 98.0, 2: 121.0, 3: 90.0}
    base = {0: 100.0, 1: 95.0, 2: 110.0, 3: 91.0, 9: 50.0}  # round 9 has no partner: left out
    logs = np.log([105 / 100, 98 / 95, 121 / 110, 90 / 91])
    r = paired_ratio(cell, base)
    t = stats.ttest_1samp(logs, 0.0)
    low, high = stats.t.interval(0.95, len(logs) - 1, loc=logs.mean(), scale=stats.sem(logs))
    assert r.ratio == pytest.approx(math.exp(logs.mean()))
    assert (r.ci_low, r.ci_high) == pytest.approx((math.exp(low), math.exp(high)))
    assert r.p_value == pytest.approx(t.pvalue)


def test_paired_ratio_sees_through_drift_that_hides_a_difference_from_an_unpaired_ratio() -> None:
    drift = [1.0, 1.3, 0.8, 1.1, 0.9]  # the machine's speed, round by round
    base = {i: 100 * d for i, d in enumerate(drift)}
    cell = {i: 95 * d * (1 + 0.001 * (-1) ** i) for i, d in enumerate(drift)}
    assert paired_ratio(cell, base).significant
    assert not ratio(list(cell.values()), list(base.values())).significant


def test_paired_ratio_needs_two_rounds_and_positive_values() -> None:
    assert math.isnan(paired_ratio({0: 1.0}, {0: 2.0}).ci_low)
    assert paired_ratio({0: 1.0}, {0: 2.0}).ratio == pytest.approx(0.5)
    assert math.isnan(paired_ratio({0: 1.0, 1: 0.0}, {0: 2.0, 1: 2.0}).ci_low)


def test_runs_of_splits_values_where_their_key_changes() -> None:
    got = runs_of(pd.Series(["b", "b", "a", "c"]), np.array([1.0, 2.0, 3.0, 4.0]))
    assert {k: v.tolist() for k, v in got.items()} == {"b": [1.0, 2.0], "a": [3.0], "c": [4.0]}
    assert runs_of(pd.Series([], dtype=str), np.array([])) == {}


def test_runs_of_refuses_keys_whose_rows_are_apart() -> None:
    with pytest.raises(ValueError, match="contiguous"):
        runs_of(pd.Series(["b", "a", "b"]), np.array([1.0, 2.0, 3.0]))


def test_cell_values_sum_each_trial_and_keep_trial_order(tmp_path: Path) -> None:
    frame = store_frame(tmp_path, {"base": [mixed_trial(1000.0, 300.0), mixed_trial(900.0, 200.0)], "x": []})
    got = cell_values(frame, "iops")
    assert list(got) == ["base"] and got["base"].tolist() == [1300.0, 1100.0]


def same(a: object, b: object) -> bool:
    """Equal field by field, NaN equal to NaN: bit for bit, not approximately."""
    return all(x == y or (x != x and y != y) for x, y in zip(vars(a).values(), vars(b).values(), strict=True))


def test_many_cells_at_once_give_each_cell_its_own_numbers_in_order() -> None:
    rng = np.random.default_rng(3)
    groups = [rng.normal(1000, 50, n) for n in (3, 8, 0, 1, 8, 5, 3)] + [np.full(4, 7.0), [2.0, 2.0]]
    assert all(same(s, summarize(g, 0.99)) for s, g in zip(summaries(groups, 0.99), groups, strict=True))
    for got, g in zip(summaries(groups, 0.99), groups, strict=True):
        one = np.asarray(g, dtype=float)
        assert got.n == len(one)
        if len(one):
            assert got.mean == one.mean() and got.median == np.median(one) and got.max == one.max()
        if len(one) > 1:
            assert got.std == one.std(ddof=1)
            half = t_quantile(0.99, len(one) - 1) * one.std(ddof=1) / math.sqrt(len(one))
            assert (got.ci_low, got.ci_high) == (one.mean() - half, one.mean() + half)  # a constant cell: half 0
    pairs = [(groups[i], groups[j]) for i in range(len(groups)) for j in range(len(groups))]
    assert all(same(r, ratio(a, b)) for r, (a, b) in zip(ratios_of(pairs), pairs, strict=True))
    for got, (a, b) in zip(ratios_of(pairs), pairs, strict=True):
        if len(a) > 1 and len(b) > 1 and min(np.std(a), np.std(b)) > 0:
            welch = stats.ttest_ind(a, b, equal_var=False).pvalue
            assert got.ratio == np.mean(a) / np.mean(b) and math.isclose(got.p_value, welch, rel_tol=1e-9)
        elif min(len(a), len(b)) == 1:
            assert got.ratio == np.mean(a) / np.mean(b) and math.isnan(got.ci_low)
        elif not (len(a) and len(b)):
            assert math.isnan(got.ratio)


# Rates, not single draws: 20,000 simulated runs each, seeded (the same numbers every time). The bounds
# are also six binomial standard deviations from the nominal rate (0.0092 at 5%), so even unseeded they
# would fail by chance in fewer than one run in 10^8. A CV of 24% is what zram showed on a busy host
# (tests/long/test_statistics_real.py).
SIMULATED = 20_000
SIX_SIGMA = 6 * math.sqrt(0.05 * 0.95 / SIMULATED)


@pytest.mark.parametrize("n", [4, 8])
def test_welch_calls_identical_cells_different_in_at_most_five_percent_of_runs(n: int) -> None:
    rng = np.random.default_rng(100 + n)
    a, b = rng.normal(1000, 240, (SIMULATED, n)), rng.normal(1000, 240, (SIMULATED, n))
    rate = np.mean([r.significant for r in ratios_of(list(zip(a, b, strict=True)))])
    # Welch's test is a little conservative at small n with equal spreads (4.2% at n=4, 4.8% at n=8):
    # more than 5% would be a p-value too small, none at all a test that never rejects.
    assert 0.03 <= rate <= 0.05 + SIX_SIGMA, rate


@pytest.mark.parametrize(("n", "spread_a", "spread_b"), [(4, 120, 100), (8, 120, 100), (4, 15, 300), (8, 15, 300)])
def test_fiellers_interval_holds_the_true_ratio_in_95_percent_of_runs(n: int, spread_a: float, spread_b: float) -> None:
    rng = np.random.default_rng(n * 1000 + spread_b)
    a, b = rng.normal(500, spread_a, (SIMULATED, n)), rng.normal(1000, spread_b, (SIMULATED, n))
    found = ratios_of(list(zip(a, b, strict=True)))
    low, high = np.array([r.ci_low for r in found]), np.array([r.ci_high for r in found])
    bounded = ~np.isnan(low)  # unbounded (NaN) where the baseline's own interval reaches zero: said, not wrong
    assert bounded.mean() > 0.95
    coverage = np.mean((low[bounded] <= 0.5) & (high[bounded] >= 0.5))
    # Fieller's interval takes the smaller sample's degrees of freedom: at or above 95% (96-97% here), never
    # below; an interval that always held everything would pass the lower bound, not the upper.
    assert 0.95 - SIX_SIGMA <= coverage <= 0.985, coverage


def test_the_paired_ratios_interval_holds_the_true_ratio_in_95_percent_of_runs() -> None:
    rng = np.random.default_rng(7)
    rounds = 5  # a round's drift (CV 30%) is shared by both cells of it
    drift = rng.normal(0, 0.3, (SIMULATED, rounds))
    cell = 1000 * np.exp(drift + rng.normal(math.log(0.8), 0.1, (SIMULATED, rounds)))
    base = 1000 * np.exp(drift)
    found = [paired_ratio(dict(enumerate(c)), dict(enumerate(b))) for c, b in zip(cell, base, strict=True)]
    coverage = np.mean([r.ci_low <= 0.8 <= r.ci_high for r in found])
    assert abs(coverage - 0.95) <= SIX_SIGMA, coverage  # exact: a t interval on normal logarithms


QUICK = Path(__file__).resolve().parents[1] / "data" / "quick" / "run.db"  # a real `quick` run


def quick_values(tmp_path: Path) -> list[np.ndarray]:
    """Each cell's trials' values of each metric the quick run's trials report once (72 trials, 24 cells)."""
    db = tmp_path / "run.db"
    shutil.copy(QUICK, db)
    store = Store.open(db, create=False)
    frame = store.samples_frame(store.resolve_run("latest"))
    store.close()
    out = []
    for metric in ("iops", "bw_bytes", "clat_mean", "clat_p99", "lat_mean", "slat_mean"):
        out.extend(cell_values(frame, metric).values())
    return out


def test_welch_of_many_pairs_at_once_is_each_pair_one_at_a_time_on_a_real_run(tmp_path: Path) -> None:
    """compare's intervals for all cells at once: every number, note and flag is the per-cell one, bit for bit."""
    values = quick_values(tmp_path)
    assert len(values) >= 72 and {len(v) for v in values} == {4}
    # Its cells against each other, and the edges: trials cut short or missing, a zero, no spread on either side.
    edges = [values[0][:3], values[1][:1], np.array([]), np.concatenate([values[2][:2], [0.0]]), np.full(4, 5.0)]
    groups = values + edges
    pairs = [(a, b) for a in groups for b in groups[::7]]
    got = welch_logs_of(pairs)
    one = [welch_logs(a, b) for a, b in pairs]
    assert [repr(g) for g in got] == [repr(o) for o in one]
    assert {g.note for g in got} >= {"", "one trial", "no trials on one side", "a value not above zero"}
    rs = [dataclasses.replace(r, sem=r.sem * 3) for r in one]  # a floored sem, as verdicts.judge passes
    for confidence in (0.95, 0.99):
        columns = np.array([(r.mean, r.sem, r.df) for r in rs], dtype=float).T
        ratios = log_ratios(columns[0], columns[1], columns[2], confidence)
        assert [repr(r) for r in ratios] == [repr(log_ratio(r, confidence)) for r in rs]
