"""Order the trials: rounds of repetitions, each visiting every cell once.

Within a round, stacks that share lower layers (device, filesystem, engine)
stay together so a StackBuilder that rebuilds them (``trials.rebuild:
every-round``, or a stack the pool does not hold: stack/pool.py) builds those
layers once; but the order of those groups, of the stacks inside a group and
of the workloads inside a stack is shuffled anew every round (seeded, so a run
can be reproduced). So drift over time, and the advantage of running first,
fall on no cell in particular.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from layerbench.spec.models import Cell, StackSpec


@dataclass(frozen=True)
class Trial:
    cell: Cell
    repetition: int


@dataclass(frozen=True)
class StackPlan:
    stack: StackSpec
    trials: list[Trial]


def plan_round(
    cells: list[Cell], repetition: int, done: set[tuple[str, int]] = frozenset(), seed: int = 0
) -> list[StackPlan]:
    rng = random.Random(f"{seed}:{repetition}")
    todo = [c for c in cells if (c.id, repetition) not in done]
    plans = []
    for stack in _grouped_shuffle(list(dict.fromkeys(c.stack for c in todo)), rng):
        trials = [Trial(c, repetition) for c in todo if c.stack == stack]
        rng.shuffle(trials)
        plans.append(StackPlan(stack, trials))
    return plans


def plan(
    cells: list[Cell], repetitions: int, done: set[tuple[str, int]] = frozenset(), seed: int = 0
) -> list[StackPlan]:
    """Every round of a fixed-count run, in order."""
    return [p for rep in range(repetitions) for p in plan_round(cells, rep, done, seed)]


def _grouped_shuffle(stacks: list[StackSpec], rng: random.Random) -> list[StackSpec]:
    tree: dict[Any, dict[Any, dict[Any, list[StackSpec]]]] = {}
    for s in stacks:
        tree.setdefault(s.device, {}).setdefault(s.filesystem, {}).setdefault(s.engine, []).append(s)
    out: list[StackSpec] = []
    for by_fs in _shuffled(list(tree.values()), rng):
        for by_engine in _shuffled(list(by_fs.values()), rng):
            for group in _shuffled(list(by_engine.values()), rng):
                out.extend(_shuffled(group, rng))
    return out


def _shuffled(items: list[Any], rng: random.Random) -> list[Any]:
    items = list(items)
    rng.shuffle(items)
    return items
