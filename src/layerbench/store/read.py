"""The read model: one run loaded once into typed objects, for analysis, reports, the CLI and the API.

The store keeps cells, specs and trials' conditions as JSON; they are parsed
and validated here, once, so nothing above reads a JSON string, and a swept
workload's point is a field of its cell rather than a suffix of its name.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from hdrh.histogram import HdrHistogram
from pydantic import TypeAdapter, ValidationError

from layerbench import hdr
from layerbench.errors import SpecError, StoreError
from layerbench.spec.matrix import SweepPoint, SweepPoints, sweep_point, sweep_points
from layerbench.spec.models import STORED_CONTEXT, Cell, FioWorkload, StackSpec, Trials, Workload
from layerbench.store.db import CellRow, CheckRow, ProfileRecord, RefusedRow, RunRow, Store, TrialRow
from layerbench.workloads import fio, fio_log

WORKLOAD = TypeAdapter(Workload)


@dataclass(frozen=True)
class StoredCell:
    cell_id: str
    label: str
    stack_label: str
    workload: str  # the workload's name as it ran (a swept one's names its point)
    cell: Cell
    is_baseline: bool
    baseline_cell_id: str | None
    point: SweepPoint  # the spec's workload it came from, and its swept fields' values

    @property
    def stack(self) -> StackSpec:
        return self.cell.stack

    @property
    def operation(self) -> str:
        """What the spec calls the workload: a swept one folds into its origin."""
        return self.point.origin


@dataclass(frozen=True)
class StoredTrial:
    id: int
    cell_id: str
    repetition: int
    status: str  # "ok" | "failed"
    category: str | None
    stderr: str
    info: dict[str, Any]  # what the trial recorded of its conditions (target, devices, endpoints, limits)
    client_latency: dict[str, HdrHistogram]  # database clients: operation → all instances' histogram
    ended_at: float | None = None  # when it ended (epoch seconds)


@dataclass(frozen=True)
class Completion:
    """One fio job's completion-latency histogram (ns → count) in one successful trial."""

    cell_id: str
    trial_id: int
    direction: str
    bins: Mapping[int, int]


@dataclass(frozen=True)
class Timeline:
    """One successful trial's latency over time (fio's latency log, averaged per interval over its jobs)."""

    cell_id: str
    trial_id: int
    repetition: int
    every_ms: int  # the interval fio averaged over
    intervals: tuple[fio_log.Interval, ...]


@dataclass(frozen=True)
class RunData:
    run: RunRow
    trials_rule: Trials  # the spec's repetitions and precision target: the confidence of every interval
    cells: tuple[StoredCell, ...]
    trials: tuple[StoredTrial, ...]
    checks: tuple[CheckRow, ...]
    refused: tuple[RefusedRow, ...]
    samples: pd.DataFrame  # Store.samples_frame: one row per sample of the successful trials
    monitor: pd.DataFrame  # Store.monitor_frame: the successful trials' monitor series
    completions: tuple[Completion, ...] | None  # fio's histograms; None unless loaded with latency=True
    # Each profiled cell's profile (`profile: cpu`: its first round's trial); empty unless loaded with profiles.
    profiles: dict[str, ProfileRecord] = field(default_factory=dict)
    # fio's latency logs, parsed; empty unless loaded with latency=True (and for runs before they were kept)
    timelines: tuple[Timeline, ...] = ()

    @property
    def per_filesystem(self) -> bool:
        """The baseline is native on each cell's own filesystem: seed 004's ratio table applies."""
        return "filesystem" in (self.run.spec.get("baseline") or {}).get("same", [])


def load(store: Store, run_ref: str, latency: bool = False, profiles: bool = False) -> RunData:
    """A run (an id, a unique prefix or "latest"); ``latency`` also parses fio's histograms out of every
    trial's raw output (what `show --latency` and the report need; seconds on a long run); ``profiles``
    reads the profiled trials' folded stacks (the report and `advise`)."""
    run = store.run(store.resolve_run(run_ref))
    with collector_paused():
        infos = store.trial_infos(run.id)
        cells = _cells(store, run)
        trials = tuple(_trial(t, infos.get(t.id, {})) for t in store.trials(run.id))
        return RunData(
            run=run,
            trials_rule=Trials.model_validate(run.spec.get("trials") or {}),
            cells=cells,
            trials=trials,
            checks=tuple(store.checks(run.id)),
            refused=tuple(store.refused(run.id)),
            samples=store.samples_frame(run.id),
            monitor=store.monitor_frame(run.id),
            completions=_completions(store.raw_outputs(run.id)) if latency else None,
            profiles=_cell_profiles(store, run.id) if profiles else {},
            timelines=_timelines(store.logs(run.id, "lat"), cells, trials) if latency else (),
        )


def _cell_profiles(store: Store, run_id: str) -> dict[str, ProfileRecord]:
    cell_of = {t.id: t.cell_id for t in store.trials(run_id)}
    return {cell_of[tid]: p for tid, p in sorted(store.profiles(run_id).items()) if tid in cell_of}


def samples(store: Store, run_ref: str) -> tuple[tuple[StoredCell, ...], pd.DataFrame]:
    """A run's cells and its samples (Store.samples_frame) alone: what an export needs, without the trials,
    checks and monitor series ``load`` reads too (1 s of a 1M-sample run)."""
    run = store.run(store.resolve_run(run_ref))
    with collector_paused():
        return _cells(store, run), store.samples_frame(run.id)


def _cells(store: Store, run: RunRow) -> tuple[StoredCell, ...]:
    points = _sweep_points(run.spec)
    return tuple(_cell(row, points, run.id) for row in store.cells(run.id))


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector off while a run is read: the millions of rows it reads are acyclic tuples and
    records, freed by reference counting, yet every few thousand new ones start a pass over all of them
    (0.65 s of a 1M-sample load). Back as it was afterwards, so a cycle made meanwhile is collected then."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _sweep_points(spec: dict[str, Any]) -> SweepPoints:
    """The points of the spec's sweeps; a workload a later layerbench no longer reads sweeps nothing."""
    out: SweepPoints = {}
    for data in spec.get("workloads") or []:
        try:
            out |= sweep_points([WORKLOAD.validate_python(data, context=STORED_CONTEXT)], STORED_CONTEXT)
        except (ValidationError, SpecError):
            continue
    return out


def _cell(row: CellRow, points: SweepPoints, run_id: str) -> StoredCell:
    try:
        cell = Cell.model_validate_json(row.config_json, context=STORED_CONTEXT)
    except ValidationError as exc:
        raise StoreError(
            f"cell {row.label!r} of run {run_id} is not a cell this layerbench reads: {exc.errors()[0]['msg']}",
            hint="read it with the layerbench version that ran it, or export it with sqlite3",
        ) from exc
    return StoredCell(
        row.cell_id,
        row.label,
        row.stack_label,
        row.workload,
        cell,
        row.is_baseline,
        row.baseline_cell_id,
        sweep_point(cell.workload, points),
    )


def _trial(t: TrialRow, info: dict[str, Any]) -> StoredTrial:
    encoded = (info.get("latency_hdr") or {}) if t.status == "ok" else {}
    latency = {op: hdr.decode(text) for op, text in encoded.items()}
    return StoredTrial(t.id, t.cell_id, t.repetition, t.status, t.category, t.stderr, info, latency, t.ended_at)


def _timelines(
    logs: list[tuple[str, int, str]], cells: tuple[StoredCell, ...], trials: tuple[StoredTrial, ...]
) -> tuple[Timeline, ...]:
    workload = {c.cell_id: c.cell.workload for c in cells}
    trial = {t.id: t for t in trials}
    out = []
    for cell_id, trial_id, text in logs:
        w, t = workload.get(cell_id), trial[trial_id]
        if not isinstance(w, FioWorkload):
            continue
        every = int(t.info.get("lat_log_ms") or fio_log.interval_ms(w))
        try:
            found = fio_log.intervals(fio_log.parse(text), every)
        except fio_log.FioLogError:
            continue  # a log a later fio writes otherwise: the trial's results stand without it
        out.append(Timeline(cell_id, trial_id, t.repetition, every, tuple(found)))
    return tuple(out)


def _completions(raw_outputs: list[tuple[str, int, str]]) -> tuple[Completion, ...]:
    out = []
    for cell_id, trial_id, raw in raw_outputs:
        try:
            result = fio.parse(raw)
        except fio.FioParseError:
            continue  # not fio's output (another tool's trial): no histogram
        for job in result.jobs:
            out += [Completion(cell_id, trial_id, d, data.clat_bins) for d, data in job.directions.items()]
    return tuple(out)
