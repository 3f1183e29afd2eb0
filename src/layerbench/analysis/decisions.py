"""Decisions, not "undecided": which of a run's comparisons are still open, what would decide each, and which
cells the next round should run so that the run's time goes where a verdict is still open.

A run with a budget (``trials.budget``) gives every cell its first rounds (``Trials.first_rounds``), then
each round to the cells of the comparisons still undecided that this host can decide within what is left of
the budget (both cells of each, so they stay paired); it stops when every comparison is decided, the budget
is spent, or what is still open cannot be decided within what is left. Each comparison is judged only at
its looks (analysis/looks.py), each look at its own share of α, so choosing rounds by what the intervals
show so far costs them nothing: they hold whenever the run stops.

What would decide a comparison is read off its own numbers: at its moderated spread per round and its mean
so far, the first look at which its interval would lie wholly inside the band (if its mean stays inside it)
or wholly on one side of ×1; and the trials' own times make those rounds into minutes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from layerbench.analysis import comparisons, looks
from layerbench.analysis.comparisons import Family
from layerbench.analysis.lazy_special import special
from layerbench.analysis.verdicts import BAND, UNDECIDED
from layerbench.spec.models import Cell, Trials
from layerbench.store.read import RunData

AN_HOUR_S = 3600.0


@dataclass(frozen=True)
class Open:
    """An undecided comparison, and what would decide it."""

    subject: str  # cell ids
    reference: str
    metric: str
    rounds: int  # paired rounds so far
    spread: float  # the log ratio's standard deviation per round (NaN: not known yet)
    more: int | None  # rounds more that would decide it at this spread and mean; None: no look would
    seconds: float | None  # what those rounds would take, from its two cells' trial times
    low: float  # its interval now (ratios)
    high: float

    def advice(self, cpu_bound: bool = False) -> str:
        """What it would take, in words: rounds and minutes, or why this host cannot; and what the run rules out."""
        ruled = ruled_out(self.low, self.high)
        if self.spread != self.spread:
            return "no spread yet: a second round paired says what it would take"
        if self.more is None or self.seconds is None or self.seconds > AN_HOUR_S:
            noise = f"±{100 * math.expm1(self.spread):.0f}% per round"
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

    def summary(self) -> str:
        """What more time would buy, in one line of an 80-column terminal: "15 of 24 decided; 9 open: ~6 min
        more decides 4, 5 need >1 h (advise)" (`layerbench advise` says what would decide each)."""
        known = [o for o in self.open if o.spread == o.spread]
        within = [o.seconds for o in known if o.seconds is not None and o.seconds <= AN_HOUR_S]
        parts = [f"~{max(within) / 60:.0f} min more decides {len(within)}"] if within else []
        parts += [f"{len(known) - len(within)} need >1 h"] if len(known) > len(within) else []
        parts += [f"{len(self.open) - len(known)} need a second round to say"] if len(self.open) > len(known) else []
        if within and len(within) == len(self.open):
            parts = [f"~{max(within) / 60:.0f} min more decides all"]
        return f"{self.decided} of {self.total} decided; {len(self.open)} open: {', '.join(parts)} (advise)"

    def seconds_to_decide(self) -> float | None:
        """How long the open ones that can be decided would take, one round serving all at once: the longest."""
        times = [o.seconds for o in self.open if o.seconds is not None]
        return max(times, default=None)


def rounds_needed(
    mean: np.ndarray,
    spread: np.ndarray,
    lent: np.ndarray,
    rounds: np.ndarray,
    alpha: float | np.ndarray,
    within: float = math.inf,
) -> np.ndarray:
    """The first look after ``rounds`` at which each comparison, with this mean log ratio and spread per round
    (``lent``: the degrees of freedom the run's other comparisons lend it), would be decided at ``alpha`` (α/K:
    its share of the run's): wholly inside the band, or wholly on one side of ×1. Infinite where no look on the
    schedule would (NaN inputs included); looks past ``within`` rounds are not tried (a simulation's budget
    ends before them)."""
    found = np.full(np.shape(mean), np.inf)
    with np.errstate(invalid="ignore", divide="ignore"):
        first = float(np.min(np.asarray(rounds, dtype=float), initial=np.inf))
        for look, share in zip(looks.LOOKS, looks.SHARES, strict=True):
            if look > within or np.isfinite(found).all():
                break
            if look <= first:
                continue  # every comparison has had this look
            half = special.stdtrit(look - 1 + lent, 1 - alpha * share / 2) * spread / math.sqrt(look)
            decides = ((np.abs(mean) + half <= BAND) | (half < np.abs(mean))) & (look > rounds)
            found = np.where(decides & np.isinf(found), look, found)
    return found


def of_run(data: RunData, family: Family | None = None) -> Decisions:
    """The run's comparisons: how many are decided, and for each open one what would decide it (a fixed run's
    too: what a budget run would need from here, at the same noise, by the budget's rule)."""
    family = family or comparisons.of_run(data)
    judged = list(family.judged.items())
    k = max(sum(1 for _, j in judged if j.ratio.ci_low == j.ratio.ci_low), 1)  # the family's Bonferroni divisor
    alpha = (1 - family.confidence) / k
    seconds, rounds = trial_seconds(data), _rounds(data)
    opened = [(key, j) for key, j in judged if j.verdict == UNDECIDED]
    n = np.array([len(rounds.get(a, set()) & rounds.get(b, set())) for (a, b, _), _ in opened], dtype=float)
    read = np.array([j.rounds for _, j in opened], dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        spread = np.array([j.sem for _, j in opened], dtype=float) * np.sqrt(read)
        mean = np.log(np.array([j.ratio.ratio for _, j in opened], dtype=float))
    lent = np.nan_to_num(np.array([j.dof for _, j in opened], dtype=float) - (read - 1), nan=0.0)
    targets = rounds_needed(mean, spread, lent, n, alpha) if opened else np.array([])
    out = []
    for ((subject, reference, metric), j), done, target, sd in zip(opened, n, targets, spread, strict=True):
        more = int(target - done) if math.isfinite(target) else None
        cost = None if more is None else more * (seconds.get(subject, 0.0) + seconds.get(reference, 0.0))
        low, high = j.ratio.ci_low, j.ratio.ci_high
        out.append(Open(subject, reference, metric, int(done), float(sd), more, cost, low, high))
    return Decisions(len(judged) - len(out), tuple(out))


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
        done = f"decided {d.decided} of {d.total}, {len(d.open)} open{need}"
        if d.open and not self.round_trials and self.left > 0:
            return f"{done}: none can be decided within the {budget} of budget left, stopping"
        return f"{done}, {budget} of budget left"


def status_of(cells: Sequence[Cell], data: RunData, rule: Trials) -> tuple[list[Cell], Status]:
    """``next_cells`` with what the choice was made from."""
    chosen, decisions = next_cells(cells, data, rule)
    return chosen, Status(decisions, len(chosen), left(data, rule), rule.budget_trials is not None)


def next_cells(cells: Sequence[Cell], data: RunData, rule: Trials) -> tuple[list[Cell], Decisions | None]:
    """The cells the next round runs, and the decisions it was chosen from (None in the first rounds): every
    cell until each has its first rounds; then the cells of the open comparisons whose deciding fits in what
    is left of the budget, cheapest first, as many as the round can pay for; none once all are decided, the
    budget is spent, or no open one can be decided within it (more rounds there would spend the budget on
    intervals that narrow without deciding: the run says what each would need instead)."""
    rounds = _rounds(data)
    if any(len(rounds.get(c.id, ())) < rule.first_rounds for c in cells):
        return list(cells), None
    decisions = of_run(data)
    remaining = left(data, rule)
    per_trial = rule.budget_trials is not None
    seconds = trial_seconds(data)

    def cost(ids: set[str]) -> float:
        return float(len(ids)) if per_trial else sum(seconds.get(i, 0.0) for i in ids)

    wanted: set[str] = set()
    for o in _fitting(decisions.open, remaining, per_trial):
        more = wanted | {o.subject, o.reference}
        if cost(more) <= remaining:  # a round is paired: both cells of a comparison, or neither
            wanted = more
    return [c for c in cells if c.id in wanted], decisions


def _fitting(opened: Sequence[Open], remaining: float, per_trial: bool) -> list[Open]:
    """The open comparisons whose deciding fits in what is left, cheapest first."""

    def cost(o: Open) -> float:
        if o.more is None or o.seconds is None:
            return math.inf
        return 2.0 * o.more if per_trial else o.seconds

    return sorted((o for o in opened if cost(o) <= remaining), key=cost)
