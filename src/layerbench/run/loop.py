"""The run loop: for each stack, build it, precondition it, run its trials,
save each trial the moment it ends. A failure is data: a failed trial row
with a category and the tool's stderr, and the run goes on."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from layerbench.errors import LayerbenchError, ToolError
from layerbench.profiling.recorder import recording
from layerbench.records.info import Attempt
from layerbench.records.run import CellRow
from layerbench.records.trial import TrialRecord
from layerbench.run import quiet
from layerbench.run.decide import Decide, every_cell
from layerbench.run.kinds import TrialKind, kind_of
from layerbench.run.kinds.single import Outcome as TrialOutcome
from layerbench.run.kinds.single import record
from layerbench.run.results import Results
from layerbench.run.schedule import StackPlan, Trial, plan, plan_round
from layerbench.run.states import in_state
from layerbench.spec.matrix import Matrix
from layerbench.spec.models import Cell, Experiment, Workload
from layerbench.stack.build import PLACEMENT_LEVEL
from layerbench.stack.engines import api_errors, failure_category
from layerbench.stack.fleet import ServerError
from layerbench.stack.pool import Held, StackPool
from layerbench.stack.target import BuildContext
from layerbench.workloads import registry

ENGINE_ERRORS = api_errors()  # an engine's API failing under a stack: its daemon gone or broken
SETUP_ERRORS = (LayerbenchError, *ENGINE_ERRORS, OSError)  # a ServerError (its log's tail) among them
ENGINE_LEVEL = 2  # device 0, filesystem 1, engine 2, placement 3
# A load keeps its client (a JVM, pgbench) and its server busy: two at once keep a 2-core host's cores busy, and
# on a bigger one the builds between them are what paces the loads.
LOADS_AT_ONCE = 2

OnTrial = Callable[[Trial, TrialRecord], None]


@dataclass
class Tally:
    ok: int = 0
    failed: int = 0
    categories: dict[str, int] = field(default_factory=dict)
    again: int = 0  # attempts measured again because the host was busy

    def add(self, record: TrialRecord) -> None:
        self.again += len(record.info.disturbed or ())
        if record.status == "ok":
            self.ok += 1
        else:
            self.failed += 1
            key = record.category or "unknown"
            self.categories[key] = self.categories.get(key, 0) + 1


def register_cells(store: Results, run_id: str, matrix: Matrix) -> None:
    rows = [_cell_row(c, matrix.baseline_of.get(c.id)) for c in matrix.cells]
    store.add_cells(run_id, rows)
    for refusal in matrix.refused:
        cfg = refusal.cell.model_dump_json()
        store.add_refused(run_id, refusal.cell.label(), cfg, refusal.reason)


def execute(
    exp: Experiment,
    matrix: Matrix,
    store: Results,
    run_id: str,
    ctx: BuildContext,
    on_trial: OnTrial | None = None,
    seed: int = 0,
    decide: Decide = every_cell,
) -> Tally:
    """Run the rounds, each over the cells ``decide`` still gives (with a precision target: those whose
    interval is not yet narrow enough), saving each trial as it ends."""
    outcome = Tally()
    keep = exp.trials.rebuild == "once"
    with StackPool(ctx, keep) as pool:  # the stacks held across rounds, or one builder per round as before
        for rep in range(exp.trials.repetitions):
            cells = decide(matrix.cells)
            if not cells:
                break
            plans = plan_round(cells, rep, store.done_trials(run_id), seed)
            preload(pool, plans)
            for stack_plan in plans:
                for trial, record in _run_stack(pool.visit(stack_plan.stack), stack_plan, TrialOptions.of(exp)):
                    store.record_trial(run_id, record)
                    outcome.add(record)
                    if on_trial:
                        on_trial(trial, record)
            if not keep:
                pool.close()  # the next round builds every stack afresh
    return outcome


def preload(pool: StackPool, plans: list[StackPlan]) -> None:
    """The round's database stacks the pool holds but has not built, built one after another before its first
    trial, each loaded while the next ones are built: a database stack's set-up is mostly its servers' start
    and load, and nothing measured overlaps them here. A stack whose build or load fails is left to its visit,
    which builds it again and records the failure with its trials."""
    todo = [sp for sp in plans if sp.stack.server is not None and sp.stack not in pool.held()]
    if len(todo) < 2:
        return  # nothing to overlap
    workers = ThreadPoolExecutor(LOADS_AT_ONCE, thread_name_prefix="load")
    loads: dict[Future[dict], tuple[Held, list[Workload]]] = {}
    try:
        for sp in todo:
            if not pool.would_hold(sp.stack):
                break
            held = pool.visit(sp.stack)
            try:
                held.fresh(held.builder.enter(sp.stack, _data_bytes(sp)))
            except SETUP_ERRORS:
                held.builder.settle()  # its visit builds it again and records why
                break
            workloads = [t.cell.workload for t in sp.trials]
            loads[workers.submit(kind_of(sp.stack).prepare, held.target, workloads, pool.ctx)] = (held, workloads)
    except BaseException:
        workers.shutdown(wait=False, cancel_futures=True)  # the stacks' teardown ends the loads still running
        raise
    workers.shutdown(wait=True)
    for future, (held, workloads) in loads.items():
        _keep_load(future, held, workloads)


def _keep_load(future: Future[dict], held: Held, workloads: list[Workload]) -> None:
    exc = future.exception()
    held.builder.settle()
    if exc is None:
        held.prepared, held.workloads = future.result(), set(workloads)
    elif isinstance(exc, SETUP_ERRORS):
        held.builder.discard(PLACEMENT_LEVEL)  # its servers, part-loaded: its visit starts and loads them again
    else:
        raise exc


def pending(exp: Experiment, matrix: Matrix, store: Results, run_id: str) -> int:
    """Trials still to run at most (a precision target may stop cells sooner); with a budget, those of the
    rounds every cell gets first (where comparisons are still open, more follow: the progress says so)."""
    done = store.done_trials(run_id)
    rule = exp.trials
    rounds = rule.first_rounds if rule.budget is not None else rule.repetitions
    todo = sum(len(p.trials) for p in plan(matrix.cells, rounds, done))
    if rule.budget_trials is not None:
        todo = min(todo, max(0, rule.budget_trials - len(done)))
    return todo


@dataclass(frozen=True)
class TrialOptions:
    """What an experiment asks of its trials beyond their cells: a CPU profile of each cell's first trial
    (``profile``, ``hz``), fio's latency log in each file workload's trial (``latency_log``)."""

    profile: str = "none"
    hz: int = 99
    latency_log: bool = False
    again_if_contended: int = 0

    @classmethod
    def of(cls, exp: Experiment) -> TrialOptions:
        return cls(exp.profile, exp.profile_hz, exp.latency_log, exp.trials.again_if_contended)


def _run_stack(
    held: Held, sp: StackPlan, options: TrialOptions = TrialOptions()
) -> Iterator[tuple[Trial, TrialRecord]]:
    """Build (or find built), prepare what is not yet, run each trial; a stack whose engine died is rebuilt
    for the rest."""
    trials, builder, kind = list(sp.trials), held.builder, kind_of(sp.stack)
    while trials:
        started = time.time()
        try:
            target = builder.enter(sp.stack, _data_bytes(sp))
            prepared = _prepared(held, kind, target, [t.cell.workload for t in trials], builder.ctx)
        except SETUP_ERRORS as exc:
            stderr = exc.stderr if isinstance(exc, ToolError) else f"{type(exc).__name__}: {exc}"
            kind = _setup_failure(exc)
            # Whatever broke (a daemon that died while the test file was laid out, say) is not kept for the
            # next round: its teardown errors are the ledger's to clean, the run goes on with fresh layers.
            stderr += "".join(f"\nteardown: {e}" for e in builder.discard(ENGINE_LEVEL))
            for trial in trials:
                yield trial, record(trial, started, TrialOutcome(category=kind, stderr=stderr))
            return
        while trials:
            trial = trials.pop(0)
            rec = _undisturbed(kind, target, trial, prepared, builder.ctx, options)
            yield trial, rec
            if rec.category == "engine-error":
                builder.discard(ENGINE_LEVEL)  # the next pass builds a new daemon and container
                break


def _undisturbed(
    kind: TrialKind, target: object, trial: Trial, prepared: dict, ctx: BuildContext, options: TrialOptions
) -> TrialRecord:
    """The trial, measured again while the monitor saw other processes use the CPU beside it (at most
    ``again_if_contended`` times), once the host is quiet again (quiet.py): a neighbour's burst is not the
    layers' cost, and a round's pair of trials is only as good as its noisier one. The disturbed attempts'
    times, the check's reason, their values and the wait stay in the record (``info.disturbed``)."""
    rec = _trial(kind, target, trial, prepared, ctx, options)
    disturbed: list[Attempt] = []
    while _contended(rec) and len(disturbed) < options.again_if_contended:
        disturbed.append(dataclasses.replace(_attempt(rec), waited_s=round(quiet.wait_quiet(), 2)))
        rec = _trial(kind, target, trial, prepared, ctx, options)
    if not disturbed:
        return rec
    return dataclasses.replace(rec, info=dataclasses.replace(rec.info, disturbed=tuple(disturbed)))


def _contended(rec: TrialRecord) -> bool:
    return rec.status == "ok" and any(c.name == "contended" and c.status == "flag" for c in rec.checks)


def _attempt(rec: TrialRecord) -> Attempt:
    contended = next(c.detail for c in rec.checks if c.name == "contended")
    values = tuple((s.metric, s.direction, s.job, s.value) for s in rec.samples)
    return Attempt(started_at=rec.started_at, ended_at=rec.ended_at, contended=contended, samples=values)


def _trial(
    kind: TrialKind, target: object, trial: Trial, prepared: dict, ctx: BuildContext, options: TrialOptions
) -> TrialRecord:
    """One trial, in its device's state where the cell names one (run/states.py); with ``profile: cpu`` the
    first round's is profiled. Every profiled cell is profiled in the
    same round, so what perf costs the trial is a round's effect, which the paired ratios cancel."""
    run = lambda: kind.run(target, trial, prepared, ctx, options.latency_log)  # noqa: E731
    if options.profile == "none" or trial.repetition != 0:
        return in_state(target, trial, run)
    with recording(ctx, workload_comms(trial.cell.workload), options.hz) as rec:
        record = in_state(target, trial, run)
    info = dataclasses.replace(record.info, profiled=rec.notes[0] if rec.notes else True)
    return dataclasses.replace(record, profile=rec.profile, info=info)


def workload_comms(w: Workload) -> tuple[str, ...]:
    """The processes a profile's preemption count follows: the file workload's tool; a database's client."""
    return registry.of(w).comms


def _setup_failure(exc: BaseException) -> str:
    if isinstance(exc, ServerError):
        return "server-error"
    if isinstance(exc, ENGINE_ERRORS):  # the engine's API failed under us: its daemon is gone or broken
        return "engine-error"
    if isinstance(exc, ToolError):
        return failure_category(exc.rc, exc.stderr) or "setup-error"  # the engine's own, where it is to blame
    return "setup-error"


def _prepared(held: Held, kind: TrialKind, target: object, workloads: list[Workload], ctx: BuildContext) -> dict:
    """What the stack's trials read, prepared once while the stack lives: only workloads new to it now."""
    held.fresh(target)
    todo = [w for w in dict.fromkeys(workloads) if w not in held.workloads]
    if todo:
        held.prepared = {**held.prepared, **kind.prepare(target, todo, ctx)}
        held.workloads.update(todo)
    held.builder.settle()
    return held.prepared


def _data_bytes(sp: StackPlan) -> int:
    """Room the stack's files need (a tmpfs is sized by it); a database stack sizes its own."""
    return max((registry.of(t.cell.workload).data_bytes(t.cell.workload) for t in sp.trials), default=0)


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
