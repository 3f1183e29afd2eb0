"""Decisions, not "undecided": which of a run's comparisons are still open, what would decide each, and which
cells the next round should run so that the run's time goes where a verdict is still open.

A run with a budget (``trials.budget``) gives every cell ``min_repetitions`` rounds, then each round to the
cells of the comparisons still undecided (both cells of each, so they stay paired), first those this host
can decide within what is left of the budget, cheapest first. Its intervals are confidence sequences
(analysis/verdicts.py's ``judge_sequential``), so choosing rounds by what the intervals show so far costs
them nothing: they hold whenever the run stops.

What would decide a comparison is read off its own numbers: at its spread per round, the round at which its
sequence would lie wholly inside the band (if its mean stays inside it) or wholly on one side of ×1; and
the trials' own times make that rounds into minutes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from layerbench.analysis import anytime, comparisons
from layerbench.analysis.comparisons import Family
from layerbench.analysis.stats import Ratio
from layerbench.analysis.verdicts import BAND, UNDECIDED
from layerbench.spec.models import Cell, Trials
from layerbench.store.read import RunData

# Beyond this many rounds a comparison is not decided on this host in any time a user would wait.
MAX_ROUNDS = 2000
AN_HOUR_S = 3600.0


@dataclass(frozen=True)
class Open:
    """An undecided comparison, and what would decide it."""

    subject: str  # cell ids
    reference: str
    metric: str
    rounds: int  # paired rounds so far
    spread: float  # the log ratio's standard deviation per round (NaN: not known yet)
    more: int | None  # rounds more that would decide it at this spread and mean; None: not within MAX_ROUNDS
    seconds: float | None  # what those rounds would take, from its two cells' trial times
    low: float  # its interval now (ratios)
    high: float

    def advice(self, cpu_bound: bool = False) -> str:
        """What it would take, in words: rounds and minutes, or why this host cannot; and what the run rules out."""
        ruled = ruled_out(self.low, self.high)
        if self.more is None or self.seconds is None or self.seconds > AN_HOUR_S:
            noise = f"±{100 * math.expm1(self.spread):.0f}% per round" if self.spread == self.spread else "its noise"
            why = f"this host's noise ({noise}) cannot resolve {100 * math.expm1(BAND):.0f}% within an hour"
            if cpu_bound:
                why += "; the CPU was the limit: run on a host with more cores or a slower device"
            return f"{why}{ruled}"
        minutes = self.seconds / 60
        return f"about {self.more} more rounds (~{minutes:.0f} min) at this noise{ruled}"


def ruled_out(low: float, high: float) -> str:
    """The smallest differences the interval rules out: "; rules out more than 12% slower or 3% faster"."""
    if not (math.isfinite(low) and math.isfinite(high)) or low <= 0:
        return ""
    parts = []
    if low < 1:
        parts.append(f"{100 * (1 - low):.0f}% slower")
    if high > 1:
        parts.append(f"{100 * (high - 1):.0f}% faster")
    return f"; rules out more than {' or '.join(parts)}" if parts else ""


@dataclass(frozen=True)
class Decisions:
    decided: int
    open: tuple[Open, ...]

    @property
    def total(self) -> int:
        return self.decided + len(self.open)

    def seconds_to_decide(self) -> float | None:
        """How long the open ones that can be decided would take, one round serving all at once: the longest."""
        times = [o.seconds for o in self.open if o.seconds is not None]
        return max(times, default=None)


def rounds_to_decide(mean: float, spread: float, rounds: int, alpha: float) -> int | None:
    """The first round count at which a sequence with this mean and spread per round decides: wholly inside
    the band, or wholly on one side of ×1; None within MAX_ROUNDS or without a spread."""
    if not (spread == spread and spread > 0 and mean == mean):
        return None
    for n in _candidates(rounds):
        half = anytime.boundary(n, alpha) * spread / math.sqrt(n)
        if abs(mean) + half <= BAND or half < abs(mean):
            return n
    return None


def _candidates(rounds: int) -> list[int]:
    """Round counts to try from the next on: every one to 200, then coarser (the boundary changes slowly)."""
    dense = list(range(max(rounds + 1, 2), 201))
    return dense + list(range(max(rounds + 1, 210), MAX_ROUNDS + 1, 10))


def of_run(data: RunData, family: Family | None = None) -> Decisions:
    """The run's comparisons: how many are decided, and for each open one what would decide it."""
    family = family or comparisons.of_run(data)
    judged = list(family.judged.items())
    k = max(sum(1 for _, j in judged if j.ratio.ci_low == j.ratio.ci_low), 1)  # the family's Bonferroni divisor
    alpha = (1 - family.confidence) / k
    seconds = trial_seconds(data)
    rounds = _rounds(data)
    opened = []
    for (subject, reference, metric), j in judged:
        if j.verdict != UNDECIDED:
            continue
        n = len(rounds.get(subject, set()) & rounds.get(reference, set()))
        spread = _spread(j.ratio, n, alpha)
        target = rounds_to_decide(math.log(j.ratio.ratio) if j.ratio.ratio > 0 else math.nan, spread, n, alpha)
        more = None if target is None else target - n
        cost = None if more is None else more * (seconds.get(subject, 0.0) + seconds.get(reference, 0.0))
        opened.append(Open(subject, reference, metric, n, spread, more, cost, j.ratio.ci_low, j.ratio.ci_high))
    return Decisions(len(judged) - len(opened), tuple(opened))


def _spread(ratio: Ratio, n: int, alpha: float) -> float:
    """The per-round standard deviation behind an interval: its half-width over the boundary, times √n."""
    low, high = ratio.ci_low, ratio.ci_high
    if n < 2 or not (low == low and math.isfinite(high) and low > 0):
        return math.nan
    half = (math.log(high) - math.log(low)) / 2
    return half / anytime.boundary(n, alpha) * math.sqrt(n)


def trial_seconds(data: RunData) -> dict[str, float]:
    """Each cell's mean time per successful trial (its start to its end)."""
    sums: dict[str, list[float]] = {}
    for t in data.trials:
        if t.status == "ok" and t.started_at is not None and t.ended_at is not None:
            acc = sums.setdefault(t.cell_id, [0.0, 0.0])
            acc[0] += t.ended_at - t.started_at
            acc[1] += 1
    return {cell: total / n for cell, (total, n) in sums.items()}


def _rounds(data: RunData) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for t in data.trials:
        if t.status == "ok":
            out.setdefault(t.cell_id, set()).add(t.repetition)
    return out


def spent(data: RunData, rule: Trials) -> float:
    """What the run has spent of its budget: seconds of trials, or trials."""
    if rule.budget_trials is not None:
        return float(len(data.trials))
    return sum(t.ended_at - t.started_at for t in data.trials if t.started_at is not None and t.ended_at is not None)


def left(data: RunData, rule: Trials) -> float:
    total = rule.budget_trials if rule.budget_trials is not None else rule.budget_seconds
    return max(0.0, float(total or 0) - spent(data, rule))


@dataclass(frozen=True)
class Status:
    """What a budget run's next round was chosen from, for its progress line."""

    decisions: Decisions | None  # None in the rounds every cell gets first
    round_trials: int  # trials in the round chosen
    left: float  # of the budget: seconds of trials, or trials
    per_trial: bool  # the budget is a count of trials

    def line(self) -> str:
        """ "decided 5 of 15, 10 open (~4 min to decide those this host can), 2.1 min of budget left"."""
        budget = f"{self.left:.0f} trials" if self.per_trial else f"{self.left / 60:.1f} min"
        if self.decisions is None:
            return f"first rounds for every cell, {budget} of budget left"
        d = self.decisions
        eta = d.seconds_to_decide()
        need = f" (~{eta / 60:.0f} min to decide those this host can)" if eta else ""
        return f"decided {d.decided} of {d.total}, {len(d.open)} open{need}, {budget} of budget left"


def status_of(cells: Sequence[Cell], data: RunData, rule: Trials) -> tuple[list[Cell], Status]:
    """``next_cells`` with what the choice was made from."""
    chosen, decisions = next_cells(cells, data, rule)
    return chosen, Status(decisions, len(chosen), left(data, rule), rule.budget_trials is not None)


def next_cells(cells: Sequence[Cell], data: RunData, rule: Trials) -> tuple[list[Cell], Decisions | None]:
    """The cells the next round runs, and the decisions it was chosen from (None in the first rounds): every
    cell until each has ``min_repetitions`` rounds; then the cells of open comparisons, those that fit in what
    is left of the budget first; none once all are decided or the budget is spent."""
    rounds = _rounds(data)
    if any(len(rounds.get(c.id, ())) < rule.min_repetitions for c in cells):
        return list(cells), None
    decisions = of_run(data)
    remaining = left(data, rule)
    if not decisions.open or remaining <= 0:
        return [], decisions
    per_trial = rule.budget_trials is not None
    chosen = _chosen(decisions.open, remaining, per_trial)
    wanted = {c for o in chosen for c in (o.subject, o.reference)}
    round_cells = [c for c in cells if c.id in wanted]
    seconds = trial_seconds(data)
    cost = len(round_cells) if per_trial else sum(seconds.get(c.id, 0.0) for c in round_cells)
    return (round_cells if cost <= remaining else []), decisions  # a round is paired: whole, or not at all


def _chosen(opened: Sequence[Open], remaining: float, per_trial: bool) -> list[Open]:
    """The open comparisons whose deciding fits in what is left, cheapest first; all of them where none fits
    (more rounds still narrow every interval, and the budget ends the run)."""

    def cost(o: Open) -> float | None:
        if o.more is None:
            return None
        return 2.0 * o.more if per_trial else o.seconds

    fits = sorted((o for o in opened if (c := cost(o)) is not None and c <= remaining), key=lambda o: cost(o) or 0)
    return fits or list(opened)
