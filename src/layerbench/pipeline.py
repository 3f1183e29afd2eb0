"""The run loop: for each stack, build it, precondition it, run its trials,
save each trial the moment it ends. A failure is data: a failed trial row
with a category and the tool's stderr, and the run goes on."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from docker.errors import DockerException

from layerbench.analysis.precision import precise_enough
from layerbench.errors import LayerbenchError, ToolError
from layerbench.schedule import StackPlan, Trial, plan, plan_round
from layerbench.spec.matrix import Matrix
from layerbench.spec.models import Cell, Experiment, FioWorkload
from layerbench.stack.build import StackBuilder
from layerbench.stack.target import BuildContext, Target
from layerbench.store.db import CellRow, Store, TrialRecord
from layerbench.workloads import fio

# fio with 32 jobs needs a while to fork and lay out before its clock starts.
TRIAL_SLACK_S = 120.0
SETUP_ERRORS = (LayerbenchError, DockerException, OSError)

OnTrial = Callable[[Trial, TrialRecord], None]


@dataclass
class Outcome:
    ok: int = 0
    failed: int = 0
    categories: dict[str, int] = field(default_factory=dict)

    def add(self, record: TrialRecord) -> None:
        if record.status == "ok":
            self.ok += 1
        else:
            self.failed += 1
            key = record.category or "unknown"
            self.categories[key] = self.categories.get(key, 0) + 1


def register_cells(store: Store, run_id: str, matrix: Matrix) -> None:
    rows = [_cell_row(c, matrix.baseline_of.get(c.id)) for c in matrix.cells]
    store.add_cells(run_id, rows)
    for refusal in matrix.refused:
        cfg = refusal.cell.model_dump_json()
        store.add_refused(run_id, refusal.cell.label(), cfg, refusal.reason)


def execute(
    exp: Experiment,
    matrix: Matrix,
    store: Store,
    run_id: str,
    ctx: BuildContext,
    on_trial: OnTrial | None = None,
    seed: int = 0,
) -> Outcome:
    """Run the rounds; with a precision target, stop each cell once its CI is narrow enough."""
    outcome = Outcome()
    for rep in range(exp.trials.repetitions):
        cells = _still_imprecise(exp, matrix.cells, store, run_id)
        if not cells:
            break
        # A fresh StackBuilder per round: every repetition runs on freshly built layers.
        with StackBuilder(ctx) as builder:
            for stack_plan in plan_round(cells, rep, store.done_trials(run_id), seed):
                for trial, record in _run_stack(builder, stack_plan):
                    store.record_trial(run_id, record)
                    outcome.add(record)
                    if on_trial:
                        on_trial(trial, record)
    return outcome


def pending(exp: Experiment, matrix: Matrix, store: Store, run_id: str) -> int:
    """Trials still to run at most (a precision target may stop cells sooner)."""
    done = store.done_trials(run_id)
    return sum(len(p.trials) for p in plan(matrix.cells, exp.trials.repetitions, done))


def _still_imprecise(exp: Experiment, cells: list[Cell], store: Store, run_id: str) -> list[Cell]:
    target = exp.trials.precision
    if target is None:
        return cells
    values = headline_values(store.samples_frame(run_id), exp.trials.metric)
    return [c for c in cells if not precise_enough(values.get(c.id, []), target, exp.trials.min_repetitions)]


def headline_values(frame: pd.DataFrame, metric: str) -> dict[str, list[float]]:
    """Per cell, one value per trial: the metric summed over jobs and directions."""
    if frame.empty:
        return {}
    rows = frame[frame["metric"] == metric]
    per_trial = rows.groupby(["cell_id", "trial_id"])["value"].sum()
    return {cell: list(group.values) for cell, group in per_trial.groupby(level=0)}


def _run_stack(builder: StackBuilder, sp: StackPlan):  # -> Iterator[tuple[Trial, TrialRecord]]
    data_bytes = max(t.cell.workload.size for t in sp.trials)
    started = time.time()
    try:
        target = builder.enter(sp.stack, data_bytes)
        prep = _precondition(target, sp)
    except SETUP_ERRORS as exc:
        for trial in sp.trials:
            yield trial, _failed(trial, "setup-error", exc, started)
        return
    for trial in sp.trials:
        yield trial, run_trial(target, trial, prep)


def workload_argv(w: FioWorkload, target: Target) -> list[str]:
    if w.job_file:
        text = fio.rewrite_job_file(Path(w.job_file).read_text(), target.path, target.path_is_device)
        return fio.job_file_argv(target.put(f"lb-{w.name}.fio", text))
    return fio.argv(w, target.path, target.path_is_device)


def _precondition(target: Target, sp: StackPlan) -> dict[str, object]:
    """Fill each test file once with incompressible data before anything reads it."""
    info: dict[str, object] = {}
    # A user's job file lays out its own files, as fio does.
    for size in sorted({t.cell.workload.size for t in sp.trials if not t.cell.workload.job_file}):
        argv = fio.precondition_argv(size, target.path, target.path_is_device)
        t0 = time.monotonic()
        target.run(argv, size / 2**20 + TRIAL_SLACK_S).check()
        info[str(size)] = {"seconds": round(time.monotonic() - t0, 3)}
    return {"precondition": info}


def run_trial(target: Target, trial: Trial, extra: dict[str, object]) -> TrialRecord:
    w = trial.cell.workload
    started = time.time()
    try:
        argv = workload_argv(w, target)
        done = target.run(argv, w.runtime_s + w.ramp_s + TRIAL_SLACK_S)
    except ToolError as exc:
        category = "timeout" if exc.rc is None else "tool-error"
        return _failed(trial, category, exc, started, exc.argv)
    except (OSError, fio.FioParseError) as exc:
        return _failed(trial, "setup-error", exc, started)
    if done.rc != 0:
        return _record(trial, "failed", "tool-error", started, argv, done.stdout, done.stderr, [], extra)
    try:
        samples = fio.samples(fio.parse(done.stdout))
    except fio.FioParseError as exc:
        return _record(
            trial,
            "failed",
            "parse-error",
            started,
            argv,
            done.stdout,
            f"{exc}\n{done.stderr}",
            [],
            extra,
        )
    info = {**extra, "target": target.info, "engine": target.engine}
    return _record(trial, "ok", None, started, argv, done.stdout, done.stderr, samples, info)


def _failed(
    trial: Trial, category: str, exc: BaseException, started: float, argv: list[str] | None = None
) -> TrialRecord:
    stderr = exc.stderr if isinstance(exc, ToolError) else f"{type(exc).__name__}: {exc}"
    return _record(trial, "failed", category, started, argv or [], "", stderr, [], {})


def _record(
    trial: Trial,
    status: str,
    category: str | None,
    started: float,
    argv: list[str],
    out: str,
    err: str,
    samples: list,
    info: dict,
) -> TrialRecord:
    return TrialRecord(
        cell_id=trial.cell.id,
        repetition=trial.repetition,
        status=status,
        category=category,
        started_at=started,
        ended_at=time.time(),
        argv=argv,
        raw_output=out,
        stderr=err,
        info=info,
        samples=samples,
        checks=[],
    )


def _cell_row(cell: Cell, baseline_id: str | None) -> CellRow:
    return CellRow(
        cell_id=cell.id,
        label=cell.label(),
        stack_label=cell.stack.label(),
        workload=cell.workload.name,
        config_json=json.dumps(cell.model_dump(mode="json")),
        is_baseline=baseline_id == cell.id,
        baseline_cell_id=baseline_id,
    )
