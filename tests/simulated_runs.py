"""Simulated runs of twenty comparisons, many at once, under the fixed protocol and under decide-by-comparisons
(analysis/decisions.py's rule), for tests/unit/test_decisions.py and bench/decisions.py.

Each experiment has two workloads, each with one reference cell and ten cells judged against it (the shared
reference correlates their comparisons, as a run's do). A trial's log value is the cell's true effect, the
round's shared drift (a share ``RHO`` of the variance: +0.21 within a round under load on this machine kind,
bench/efficiency.py) and its own noise, ``SIGMA`` per trial (±4.5-5%); a share of the comparisons are
CPU-bound, three times as noisy. True effects are drawn from {0, ±3%, ±10%, ±30%}.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from layerbench.analysis import decisions, looks
from layerbench.analysis.verdicts import (
    DIFFERENT,
    EQUIVALENT,
    FASTER,
    SLOWER,
    UNDECIDED,
    Decided,
    decide,
    decide_sequential,
    family_size,
)

WORKLOADS, SUBJECTS = 2, 10
K = WORKLOADS * SUBJECTS
SIGMA, RHO, CPU_BOUND_SHARE, CPU_BOUND_FACTOR = 0.047, 0.21, 0.3, 3.0
EFFECTS = np.log([1.0, 0.97, 1.03, 0.90, 1.10, 0.70, 1.30])
MIN_ROUNDS = 3  # the fixed protocol's least
FIRST_ROUNDS = 2  # a budget run's rounds for every cell (Trials.first_rounds)
CELLS = WORKLOADS * (SUBJECTS + 1)


@dataclass(frozen=True)
class Outcome:
    effects: np.ndarray  # (runs, K) true log ratios
    verdicts: np.ndarray  # (runs, K) at the stop
    looked: np.ndarray  # (runs, K) at a random look before the stop
    trials: np.ndarray  # (runs,) trials spent


def wrong(effects: np.ndarray, verdicts: np.ndarray) -> np.ndarray:
    """Per run: any verdict wrong — a difference named where there is none, the wrong direction, or ≈ for a
    true difference of 10% or more."""
    named = np.isin(verdicts, DIFFERENT)
    null_named = named & (effects == 0)
    backwards = ((verdicts == SLOWER) & (effects > 0)) | ((verdicts == FASTER) & (effects < 0))
    equal_big = (verdicts == EQUIVALENT) & (np.abs(effects) >= math.log(1.10) - 1e-9)
    return (null_named | backwards | equal_big).any(axis=-1)


def _draw(rng: np.random.Generator, runs: int) -> tuple[np.ndarray, np.ndarray]:
    effects = rng.choice(EFFECTS, size=(runs, K))
    noise = np.where(rng.random((runs, K)) < CPU_BOUND_SHARE, SIGMA * CPU_BOUND_FACTOR, SIGMA)
    return effects, noise


def _round(rng: np.random.Generator, effects: np.ndarray, noise: np.ndarray) -> np.ndarray:
    """One round's paired log ratio of every comparison: subject and reference each get their own noise (the
    round's drift cancels in the ratio); the reference's is shared by its workload's ten comparisons."""
    runs = len(effects)
    own = math.sqrt(1 - RHO)
    subject = rng.normal(0, 1, (runs, K)) * noise * own
    reference = np.repeat(rng.normal(0, 1, (runs, WORKLOADS)), SUBJECTS, axis=1) * SIGMA * own
    return effects + subject - reference


def _judged(total: np.ndarray, squares: np.ndarray, n: np.ndarray, sequential: bool) -> np.ndarray:
    return _decided(total, squares, n, sequential).verdict


def _decided(total: np.ndarray, squares: np.ndarray, n: np.ndarray, sequential: bool) -> Decided:
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / n
        var = (squares - n * mean * mean) / (n - 1)
        sem = np.where(n >= 2, np.sqrt(np.maximum(var, 0) / n), np.nan)
    return (decide_sequential if sequential else decide)(mean, sem, n - 1.0)


def adaptive(runs: int, budget: int, seed: int, max_rounds: int = 400) -> Outcome:
    """Decide by comparisons as analysis/decisions.py does: every cell ``FIRST_ROUNDS`` rounds, then each round
    only the comparisons still undecided whose deciding fits in what is left (with their references), each
    judged at its last look (analysis/looks.py), until all are decided, none fits, or ``budget`` trials are
    spent. A random look, somewhere between the first rounds and the stop, is judged too: a Ctrl-C then."""
    rng = np.random.default_rng(seed)
    effects, noise = _draw(rng, runs)
    total, squares, n = (np.zeros((runs, K)) for _ in range(3))
    at_look = [np.zeros((runs, K)) for _ in range(3)]  # total, squares, n at each comparison's last look
    spent = np.zeros(runs)
    look_at = rng.integers(MIN_ROUNDS, 60, runs)
    looked = np.full((runs, K), UNDECIDED, dtype=object)
    verdicts = np.full((runs, K), UNDECIDED, dtype=object)
    running = np.ones(runs, dtype=bool)
    for r in range(max_rounds):
        on = np.isin(n, looks.LOOKS)
        at_look = [np.where(on, now, kept) for now, kept in zip((total, squares, n), at_look, strict=True)]
        if r:
            d = _decided(*at_look, sequential=True)
            verdicts = np.where(running[:, None], d.verdict, verdicts)
        looked = np.where((look_at == r)[:, None], verdicts, looked)
        open_ = (verdicts == UNDECIDED) | (r < FIRST_ROUNDS)
        if r >= FIRST_ROUNDS:
            open_ = _fits(d, at_look, n, budget - spent, open_ & running[:, None])
        cost = open_.sum(axis=1) + (open_.reshape(runs, WORKLOADS, SUBJECTS).any(axis=2)).sum(axis=1)
        running &= open_.any(axis=1) & (spent + cost <= budget)
        if not running.any():
            break
        take = open_ & running[:, None]
        d_round = _round(rng, effects, noise)
        total += np.where(take, d_round, 0)
        squares += np.where(take, d_round * d_round, 0)
        n += take
        spent += np.where(running, cost, 0)
    looked = np.where((look_at >= r)[:, None], verdicts, looked)  # a look after the stop sees the stop
    return Outcome(effects, verdicts, looked, spent)


def _fits(d: Decided, at_look: list[np.ndarray], n: np.ndarray, left: np.ndarray, open_: np.ndarray) -> np.ndarray:
    """Whether each open comparison's deciding, by decisions.rounds_needed, fits in what is left (two trials a
    round); worked out for the open ones only (t quantiles of every look for every comparison are slow)."""
    total, _, rounds = at_look
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / rounds
    alpha = np.broadcast_to(0.05 / family_size(d.sem), n.shape)
    spread, lent = d.sem * np.sqrt(rounds), d.dof - (rounds - 1)
    reach = float((n.max(axis=1) + left / 2).max())
    need = np.full(n.shape, np.inf)
    need[open_] = decisions.rounds_needed(
        mean[open_], spread[open_], lent[open_], n[open_], alpha[open_], reach
    )  # fmt: skip
    return open_ & (2 * (need - n) <= left[:, None])


def fixed(runs: int, rounds: int, seed: int) -> Outcome:
    """Today's fixed protocol: every cell every round, judged by its fixed-n rules (verdicts.decide)."""
    rng = np.random.default_rng(seed)
    effects, noise = _draw(rng, runs)
    d = np.stack([_round(rng, effects, noise) for _ in range(rounds)], axis=-1)
    total, squares = d.sum(axis=-1), (d * d).sum(axis=-1)
    verdicts = _judged(total, squares, np.full((runs, K), float(rounds)), False)
    return Outcome(effects, verdicts, verdicts, np.full(runs, rounds * CELLS))
