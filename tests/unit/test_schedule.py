from __future__ import annotations

from layerbench.schedule import plan
from layerbench.spec import load
from layerbench.spec.matrix import expand_stacks
from layerbench.spec.models import Cell


def quick_cells() -> list[Cell]:
    exp = load.load("quick")
    return [Cell(stack=s, workload=w) for s in expand_stacks(exp) for w in exp.workloads]


def test_each_stack_once_and_every_trial_planned() -> None:
    cells = quick_cells()
    plans = plan(cells, repetitions=3)
    assert len({p.stack for p in plans}) == len(plans) == len({c.stack for c in cells})
    trials = [(t.cell.id, t.repetition) for p in plans for t in p.trials]
    assert len(trials) == len(set(trials)) == len(cells) * 3


def test_stacks_sharing_lower_layers_are_adjacent() -> None:
    plans = plan(quick_cells(), repetitions=1)
    prefixes = [(p.stack.device, p.stack.filesystem, p.stack.engine) for p in plans]
    seen: list[object] = []
    for key in prefixes:
        if seen and seen[-1] == key:
            continue
        assert key not in seen, "a (device, filesystem, engine) group was split"
        seen.append(key)


def test_done_trials_are_skipped_and_rounds_are_shuffled_reproducibly() -> None:
    cells = quick_cells()
    done = {(cells[0].id, 0), (cells[1].id, 1)}
    trials = [(t.cell.id, t.repetition) for p in plan(cells, 2, done) for t in p.trials]
    assert not done & set(trials)
    assert len(trials) == len(cells) * 2 - 2
    order = lambda seed: [t.cell.id for p in plan(cells, 2, seed=seed) for t in p.trials]  # noqa: E731
    assert order(1) == order(1)
    assert any(order(s) != order(1) for s in range(2, 8))
