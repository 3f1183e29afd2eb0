"""Decide by comparisons (issue 53): rounds go where a verdict is still open, every interval holds whenever the
run stops, and each undecided comparison says what would decide it."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from layerbench.analysis import decisions, looks
from layerbench.analysis.stats import LogRatio
from layerbench.analysis.verdicts import EQUIVALENT, FASTER, SLOWER, UNDECIDED, judge
from layerbench.spec.feasibility import HostCaps
from tests import simulated_runs
from tests.unit import test_findings

BUDGET = 440  # trials: twenty rounds of the twenty-two cells, about 33 minutes at quick's 4.5 s a trial


def test_a_thousand_experiments_stopped_at_their_budget_or_anywhere_before_are_wrong_in_at_most_five_percent() -> None:
    out = simulated_runs.adaptive(1000, BUDGET, seed=53)
    assert simulated_runs.wrong(out.effects, out.verdicts).mean() <= 0.05
    assert simulated_runs.wrong(out.effects, out.looked).mean() <= 0.05  # a Ctrl-C at a random round
    assert (out.trials <= BUDGET).all()
    assert (out.verdicts != UNDECIDED).sum(axis=1).mean() > 8  # not vacuous: most comparisons decided
    big = np.abs(out.effects) >= math.log(1.3) - 1e-9
    assert (out.verdicts[big] != UNDECIDED).mean() > 0.9  # the big effects first


def rule(low: float, high: float) -> str:
    """The verdict from an interval and the band alone, as docs/explanation/statistics.md states it."""
    if low >= 1 / 1.05 and high <= 1.05:
        return EQUIVALENT
    return SLOWER if high < 1 else FASTER if low > 1 else UNDECIDED


def test_each_verdict_of_a_budget_run_follows_from_its_printed_interval_and_the_band() -> None:
    rng = np.random.default_rng(3)
    rounds = rng.choice(looks.LOOKS[:12], 400)  # a budget run reads each comparison at one of its looks
    means, sems = rng.normal(0, 0.15, 400), rng.uniform(0.002, 0.08, 400)
    comparisons = [
        LogRatio(int(n), float(m), float(s), float(n - 1)) for n, m, s in zip(rounds, means, sems, strict=True)
    ]
    for j in judge(comparisons, sequential=True):
        r = j.ratio
        assert j.verdict == (rule(r.ci_low, r.ci_high) if r.ci_low == r.ci_low else UNDECIDED)
        assert r.ci_low <= r.ratio <= r.ci_high


def test_an_interval_that_excludes_one_is_never_called_undecided() -> None:
    # The defect of issue 53: "undecided on RR (×0.71, 95% CI 0.52-0.96)". Here an interval and its verdict agree.
    for j in judge([LogRatio(12, math.log(0.71), 0.04, 11.0)] + [LogRatio(12, 0.0, 0.04, 11.0)] * 14, sequential=True):
        assert (j.ratio.ci_high < 1) == (j.verdict == SLOWER) or j.verdict == EQUIVALENT


def rounds_to_decide(mean: float, spread: float, lent: float, rounds: int, alpha: float) -> int | None:
    found = decisions.rounds_needed(np.array([mean]), np.array([spread]), np.array([lent]), np.array([rounds]), alpha)
    return int(found[0]) if math.isfinite(found[0]) else None


def test_rounds_to_decide_grow_as_the_difference_shrinks_and_say_none_where_no_hour_would() -> None:
    alpha = 0.05 / 15
    big = rounds_to_decide(math.log(0.7), 0.06, 10.0, 3, alpha)
    small = rounds_to_decide(math.log(0.9), 0.06, 10.0, 3, alpha)
    same = rounds_to_decide(0.0, 0.06, 10.0, 3, alpha)
    assert big is not None and small is not None and same is not None and big < small < same
    assert rounds_to_decide(0.0, 0.06, 0.0, 3, alpha) > same  # fewer degrees of freedom lent: more rounds
    assert rounds_to_decide(math.log(0.99), 5.0, 10.0, 3, alpha) is None  # a spread no run resolves


def test_an_open_comparison_says_what_would_decide_it_and_what_it_rules_out() -> None:
    o = decisions.Open("a", "b", "iops", 4, 0.06, 12, 180.0, 0.88, 1.03)
    assert o.advice() == "about 12 more rounds (~3 min) at this noise; rules out more than 12% slower or 3% faster"
    never = decisions.Open("a", "b", "iops", 4, 0.5, None, None, 0.5, 1.9)
    said = never.advice(cpu_bound=True)
    assert "cannot resolve 5% within an hour" in said and "more cores" in said


BUDGETED = test_findings.SPEC + "trials: {repetitions: 30, min_repetitions: 3, budget: '60'}\n"


def test_the_next_round_goes_to_the_cells_of_open_comparisons_only(tmp_path: Path, full_caps: HostCaps) -> None:
    first = test_findings.stored_run(tmp_path / "a", full_caps, rounds=2, spec=BUDGETED)
    cells = [c.cell for c in first.cells]
    chosen, found = decisions.next_cells(cells, first, first.trials_rule)
    assert chosen == cells and found is None  # every cell's first rounds
    later = test_findings.stored_run(tmp_path / "b", full_caps, rounds=3, spec=BUDGETED)
    cells = [c.cell for c in later.cells]
    chosen, found = decisions.next_cells(cells, later, later.trials_rule)
    assert found is not None
    wanted = {i for o in found.open for i in (o.subject, o.reference)}
    assert {c.id for c in chosen} == wanted and len(chosen) < len(cells)


def test_the_summary_says_in_one_line_what_more_time_would_buy() -> None:
    soon = decisions.Open("a", "b", "iops", 4, 0.06, 12, 360.0, 0.88, 1.03)
    never = decisions.Open("a", "c", "iops", 4, 0.5, None, None, 0.5, 1.9)
    both = "15 of 17 decided; 2 open: ~6 min more decides 1, 1 need >1 h (advise)"
    assert decisions.Decisions(15, (soon, never)).summary() == both
    assert decisions.Decisions(15, (soon,)).summary() == "15 of 16 decided; 1 open: ~6 min more decides all (advise)"
    assert decisions.Decisions(3, (never,)).summary() == "3 of 4 decided; 1 open: 1 need >1 h (advise)"
    unknown = decisions.Open("a", "d", "iops", 1, float("nan"), None, None, float("nan"), float("nan"))
    said = decisions.Decisions(0, (unknown,)).summary()
    assert said == "0 of 1 decided; 1 open: 1 need a second round to say (advise)"


def test_a_fixed_runs_undecided_comparisons_say_what_would_decide_each(tmp_path: Path) -> None:
    # The real quick run of tests/data: `advise` and the first screen say what more rounds would buy.
    import shutil

    from layerbench.report.view import view
    from layerbench.store.db import Store
    from layerbench.store.read import load

    db = tmp_path / "run.db"
    shutil.copy(Path(__file__).resolve().parents[1] / "data" / "quick" / "run.db", db)
    v = view(load(Store.open(db, create=False), "latest"))
    assert v.decided is not None and v.decided.open and not v.data.trials_rule.sequential
    assert v.open_lines == [v.decided.summary()]
    assert v.advice.undecided and all(("more rounds" in u or "cannot resolve" in u) for u in v.advice.undecided)


def test_an_open_comparison_of_one_round_says_a_second_would_tell() -> None:
    once = decisions.Open("a", "b", "iops", 1, float("nan"), None, None, float("nan"), float("nan"))
    assert once.advice() == "no spread yet: a second round paired says what it would take"
