from __future__ import annotations

from layerbench.run.schedule import plan, plan_round
from layerbench.spec import load
from layerbench.spec.matrix import expand_stacks
from layerbench.spec.models import Cell


def quick_cells() -> list[Cell]:
    exp = load.load("quick")
    return [Cell(stack=s, workload=w) for s in expand_stacks(exp) for w in exp.workloads]


def test_each_stack_once_per_round_and_every_trial_planned() -> None:
    cells = quick_cells()
    for rep in range(3):
        plans = plan_round(cells, rep)
        assert len({p.stack for p in plans}) == len(plans) == len({c.stack for c in cells})
    trials = [(t.cell.id, t.repetition) for p in plan(cells, 3) for t in p.trials]
    assert len(trials) == len(set(trials)) == len(cells) * 3


def test_stacks_sharing_lower_layers_are_adjacent() -> None:
    for rep in range(5):
        prefixes = [(p.stack.device, p.stack.filesystem, p.stack.engine) for p in plan_round(quick_cells(), rep)]
        seen: list[object] = []
        for key in prefixes:
            if seen and seen[-1] == key:
                continue
            assert key not in seen, "a (device, filesystem, engine) group was split"
            seen.append(key)


def test_rounds_are_shuffled_differently_and_reproducibly() -> None:
    cells = quick_cells()

    def order(rep: int, seed: int = 0) -> list[str]:
        return [t.cell.id for p in plan_round(cells, rep, seed=seed) for t in p.trials]

    assert order(0) == order(0)
    assert len({tuple(order(rep)) for rep in range(6)}) > 1
    assert order(0, seed=1) != order(0, seed=2) or order(1, seed=1) != order(1, seed=2)


def test_done_trials_are_skipped() -> None:
    cells = quick_cells()
    done = {(cells[0].id, 0), (cells[1].id, 1)}
    trials = [(t.cell.id, t.repetition) for p in plan(cells, 2, done) for t in p.trials]
    assert not done & set(trials)
    assert len(trials) == len(cells) * 2 - 2
