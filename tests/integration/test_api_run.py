"""A program starts, interrupts and resumes a run through the public API, with no CLI: real fio on a real
loop-mounted ext4, every trial saved as it ends, nothing left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from layerbench import api
from layerbench.records.trial import TrialRecord
from layerbench.run.schedule import Trial
from layerbench.spec import load
from layerbench.store.db import Store
from tests.integration.leftovers import leftovers

pytestmark = [pytest.mark.requires_root, pytest.mark.requires_fio]

SPEC = """
name: api-run
device: {kind: loop, size: 256MiB}
stacks: [{filesystem: ext4}, {filesystem: none}]
workloads: [{name: RR, rw: randread, bs: 4k, iodepth: 4, size: 32MiB, runtime_s: 1, ramp_s: 0}]
trials: {repetitions: 2}
"""


class Stop(KeyboardInterrupt):
    """Ctrl-C, as a program's own handler would raise it, after the first trial is saved."""


def test_a_run_started_interrupted_and_resumed_without_the_cli(tmp_path: Path) -> None:
    places = api.Places(tmp_path / "work", tmp_path / "state", api.CACHE_DIR)
    db = tmp_path / "r.db"
    run = api.start_run(load.parse(SPEC), db, places)
    assert run.pending() == 4
    heard: list[tuple[str, int, str]] = []

    def first_then_stop(trial: Trial, record: TrialRecord) -> None:
        heard.append((trial.cell.id, trial.repetition, record.status))
        raise Stop

    with pytest.raises(Stop):
        run.execute(api.Events(on_trial=first_then_stop))
    store = Store.open(db, create=False)
    assert store.run(run.run_id).status == "interrupted"
    assert len(store.trials(run.run_id)) == 1 and heard[0][2] == "ok"

    resumed = api.resume_run(run.run_id, db, places)
    assert resumed.run_id == run.run_id and resumed.pending() == 3
    outcome = resumed.execute(api.Events(on_trial=lambda t, r: heard.append((t.cell.id, t.repetition, r.status))))
    assert (outcome.ok, outcome.failed) == (3, 0)
    trials = store.trials(run.run_id)
    assert sorted((t.cell_id, t.repetition) for t in trials) == sorted((c, r) for c, r, _ in heard)
    assert len({(t.cell_id, t.repetition) for t in trials}) == 4  # none measured twice
    assert store.run(run.run_id).status == "finished"
    assert leftovers(places.work_dir) == []


BUDGET_SPEC = """
name: api-budget
device: {kind: zram, size: 512MiB}
stacks: [{filesystem: none}, {filesystem: ext4}, {filesystem: btrfs}]
workloads: [{name: RW, rw: randwrite, bs: 4k, iodepth: 8, size: 32MiB, runtime_s: 1, ramp_s: 0}]
trials: {repetitions: 50, min_repetitions: 3, budget: "15"}
"""


def test_a_budget_run_stopped_by_ctrl_c_and_resumed_ends_with_verdicts_read_off_its_intervals(tmp_path: Path) -> None:
    from layerbench.analysis.verdicts import EQUIVALENT, FASTER, SLOWER, UNDECIDED
    from layerbench.report.view import view
    from layerbench.store.read import load as load_run

    places = api.Places(tmp_path / "work", tmp_path / "state", api.CACHE_DIR)
    db = tmp_path / "r.db"
    run = api.start_run(load.parse(BUDGET_SPEC), db, places)
    seen: list[int] = []

    def stop_at_five(trial: Trial, record: TrialRecord) -> None:
        seen.append(trial.repetition)
        if len(seen) == 5:
            raise Stop

    with pytest.raises(Stop):
        run.execute(api.Events(on_trial=stop_at_five))
    store = Store.open(db, create=False)
    for stage in ("interrupted", "finished"):
        v = view(load_run(store, run.run_id))
        assert v.decided is not None and v.decided.total >= len(v.findings) > 0
        for f in v.findings:  # each verdict follows from its interval and the band alone
            low, high = f.ratio.ci_low, f.ratio.ci_high
            if low != low:
                assert f.verdict == UNDECIDED
            elif low >= 1 / 1.05 and high <= 1.05:
                assert f.verdict == EQUIVALENT
            else:
                assert f.verdict == (SLOWER if high < 1 else FASTER if low > 1 else UNDECIDED)
        if stage == "interrupted":
            assert store.run(run.run_id).status == "interrupted"
            api.resume_run(run.run_id, db, places).execute()
    assert len(store.trials(run.run_id)) <= 15  # the budget, counted over both parts
    assert store.run(run.run_id).status == "finished"
    assert leftovers(places.work_dir) == []
