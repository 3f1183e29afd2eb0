"""Order the trials: one stack at a time (built once), layers shared where possible.

Stacks are ordered so that consecutive ones share their lower layers (device,
filesystem, engine), which the StackBuilder then keeps. Within a stack the
repetitions run in rounds, and each round visits the workloads in a shuffled
order (seeded, so a run can be reproduced), so that drift over time does not
always favour the workload that runs first.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from layerbench.spec.models import Cell, StackSpec


@dataclass(frozen=True)
class Trial:
    cell: Cell
    repetition: int


@dataclass(frozen=True)
class StackPlan:
    stack: StackSpec
    trials: list[Trial]


def plan(
    cells: list[Cell], repetitions: int, done: set[tuple[str, int]] = frozenset(), seed: int = 0
) -> list[StackPlan]:
    rng = random.Random(seed)
    by_stack: dict[StackSpec, list[Cell]] = {}
    for cell in cells:
        by_stack.setdefault(cell.stack, []).append(cell)
    plans = []
    for stack in _reuse_order(list(by_stack)):
        trials = []
        for rep in range(repetitions):
            round_ = [Trial(c, rep) for c in by_stack[stack] if (c.id, rep) not in done]
            rng.shuffle(round_)
            trials.extend(round_)
        if trials:
            plans.append(StackPlan(stack, trials))
    return plans


def _reuse_order(stacks: list[StackSpec]) -> list[StackSpec]:
    """Group stacks by shared lower layers, keeping first-appearance order otherwise."""
    first_seen: dict[object, int] = {}
    for i, s in enumerate(stacks):
        for key in ((s.device,), (s.device, s.filesystem), (s.device, s.filesystem, s.engine)):
            first_seen.setdefault(key, i)

    def rank(s: StackSpec) -> tuple[int, int, int]:
        return (
            first_seen[(s.device,)],
            first_seen[(s.device, s.filesystem)],
            first_seen[(s.device, s.filesystem, s.engine)],
        )

    return sorted(stacks, key=rank)
