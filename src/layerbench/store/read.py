"""The read model: one run loaded once into typed objects, for analysis, reports, the CLI and the API.

The store keeps cells, specs and trials' conditions as JSON; they are parsed
and validated here, once, so nothing above reads a JSON string, and a swept
workload's point is a field of its cell rather than a suffix of its name.
"""

from __future__ import annotations

import base64
import functools
import json
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from hdrh.histogram import HdrHistogram
from pydantic import TypeAdapter, ValidationError

from layerbench.errors import SpecError, StoreError
from layerbench.records import hdr
from layerbench.records.info import TrialInfo
from layerbench.records.trial import ProfileRecord
from layerbench.spec.matrix import SweepPoint, SweepPoints, sweep_point, sweep_points
from layerbench.spec.models import STORED_CONTEXT, Cell, StackSpec, Trials, Workload
from layerbench.store import cache
from layerbench.store.db import CellRow, CheckRow, RefusedRow, RunRow, Store, TrialRow, collector_paused
from layerbench.workloads import fio, fio_log, registry

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
    # What the trial recorded of its conditions (target, devices, endpoints, limits): read it as ``info``. The
    # store's JSON is decoded when first asked for: few analyses read it, and 84,000 trials took a second.
    recorded: TrialInfo | str
    client_latency: dict[str, HdrHistogram]  # database clients: operation → all instances' histogram
    ended_at: float | None = None  # when it ended (epoch seconds)
    started_at: float | None = None  # when it started: a budget counts the trials' own time

    @property
    def info(self) -> TrialInfo:
        if isinstance(self.recorded, str):
            object.__setattr__(self, "recorded", TrialInfo.from_json(json.loads(self.recorded)))
        assert isinstance(self.recorded, TrialInfo)
        return self.recorded


@dataclass(frozen=True, eq=False)
class Completion:
    """fio's completion-latency histogram of one cell and direction, merged over its jobs and successful
    trials: each latency in ns (ascending) and how many I/Os completed in it."""

    cell_id: str
    direction: str
    trials: int  # how many trials' histograms were merged
    ns: np.ndarray  # int64, ascending
    counts: np.ndarray  # int64, one per ``ns``

    @property
    def bins(self) -> Mapping[int, int]:
        return dict(zip(self.ns.tolist(), self.counts.tolist(), strict=True))


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


def load(
    store: Store,
    run_ref: str,
    latency: bool = False,
    profiles: bool = False,
    frames: Mapping[str, Any] | None = None,
) -> RunData:
    """A run (an id, a unique prefix or "latest"); ``latency`` also parses fio's histograms out of every
    trial's raw output (what `show --latency` and the report need; seconds on a long run); ``profiles``
    reads the profiled trials' folded stacks (the report and `advise`). ``frames``: its parts (``run_parts``)
    already read."""
    run = store.run(store.resolve_run(run_ref))
    with collector_paused():
        parts = frames or {name: read() for name, read in run_parts(store, run.id, latency).items()}
        return RunData(
            run=run,
            trials_rule=Trials.model_validate(run.spec.get("trials") or {}),
            cells=parts["cells"],
            trials=parts["trials"],
            checks=parts["checks"],
            refused=tuple(store.refused(run.id)),
            samples=parts["samples"],
            monitor=parts["monitor"],
            completions=_cached_completions(store, run.id) if latency else None,
            profiles=_cell_profiles(store, run.id) if profiles else {},
            timelines=parts["timelines"] if latency else (),
        )


def run_parts(store: Store, run_id: str, latency: bool = False) -> dict[str, Callable[[], Any]]:
    """How ``load`` reads the run's bulk (through the cache): its cells, trials and checks (tuples of StoredCell,
    StoredTrial and CheckRow), its samples and monitor frames, and with ``latency`` its timelines (fio's
    latency logs parsed)."""

    @functools.cache  # the timelines read them too
    def trials() -> tuple[StoredTrial, ...]:
        # Trials' rows through the cache too: reading a trial's last columns walks past its raw output.
        with collector_paused():
            rows = cache.rows(store, run_id, "trials", lambda: _trial_rows(store, run_id))
            return tuple(_trial(TrialRow(*r[:-1]), r[-1]) for r in rows)

    def checks() -> tuple[CheckRow, ...]:
        with collector_paused():
            return tuple(CheckRow.of(r) for r in cache.rows(store, run_id, "checks", lambda: store.check_rows(run_id)))

    @functools.cache
    def cells() -> tuple[StoredCell, ...]:
        with collector_paused():
            return _cells(store, store.run(run_id))

    def timelines() -> tuple[Timeline, ...]:
        with collector_paused():
            return _timelines(store.logs(run_id, "lat"), cells(), trials())

    return {
        "cells": cells,
        "trials": trials,
        "checks": checks,
        "samples": lambda: cache.frame(store, run_id, "samples", lambda: store.samples_frame(run_id)),
        "monitor": lambda: cache.frame(store, run_id, "monitor", lambda: store.monitor_frame(run_id)),
    } | ({"timelines": timelines} if latency else {})


def _trial_rows(store: Store, run_id: str) -> list[tuple[Any, ...]]:
    """Store.trials' rows, each with its recorded conditions (JSON) last."""
    infos = store.trial_info_texts(run_id)
    return [(*_trial_fields(t), infos.get(t.id, "{}")) for t in store.trials(run_id)]


def _trial_fields(t: TrialRow) -> tuple[Any, ...]:
    return (t.id, t.cell_id, t.repetition, t.status, t.category, t.started_at, t.ended_at, t.stderr)


def _cell_profiles(store: Store, run_id: str) -> dict[str, ProfileRecord]:
    cell_of = {t.id: t.cell_id for t in store.trials(run_id)}
    return {cell_of[tid]: p for tid, p in sorted(store.profiles(run_id).items()) if tid in cell_of}


@dataclass(frozen=True)
class RunSamples:
    """A run's cells and samples alone (``load_samples``): what an export and a comparison of two runs read."""

    run: RunRow
    cells: tuple[StoredCell, ...]
    samples: pd.DataFrame  # as RunData.samples


def load_samples(store: Store, run_ref: str) -> RunSamples:
    """A run's cells and its samples (Store.samples_frame), without the trials, checks and monitor series
    ``load`` reads too (seconds of a 1M-sample run)."""
    run = store.run(store.resolve_run(run_ref))
    with collector_paused():
        frame = cache.frame(store, run.id, "samples", lambda: store.samples_frame(run.id))
        return RunSamples(run, _cells(store, run), frame)


def samples(store: Store, run_ref: str) -> tuple[tuple[StoredCell, ...], pd.DataFrame]:
    """``load_samples``' cells and samples."""
    loaded = load_samples(store, run_ref)
    return loaded.cells, loaded.samples


def _cells(store: Store, run: RunRow) -> tuple[StoredCell, ...]:
    """The run's cells, validated once per finished run and layerbench's code and then read back from its
    cache (store/cache.py): 10,500 cells took 0.7 s to read and validate, 0.3 s to unpickle."""
    return cache.computed(store, run.id, "cells", lambda _: _validated_cells(store, run), {})


def _validated_cells(store: Store, run: RunRow) -> tuple[StoredCell, ...]:
    points = _sweep_points(run.spec)
    cells = [_cell(row, points, run.id) for row in store.cells(run.id)]
    return tuple(_shared(cells))


def _shared(cells: list[StoredCell]) -> Iterator[StoredCell]:
    """The cells with equal stacks (and equal workloads) made one object: models are frozen, and each cell's
    own copies were most of what its cache unpickles (a 21-stack sweep of 10,500 cells: 0.27 s, now 0.08)."""
    stacks: dict[StackSpec, StackSpec] = {}
    workloads: dict[Workload, Workload] = {}
    for c in cells:
        stack = stacks.setdefault(c.cell.stack, c.cell.stack)
        workload = workloads.setdefault(c.cell.workload, c.cell.workload)
        if stack is c.cell.stack and workload is c.cell.workload:
            yield c
        else:
            yield replace(c, cell=c.cell.model_copy(update={"stack": stack, "workload": workload}))


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


def _trial(t: TrialRow, info: str) -> StoredTrial:
    """``info``: the trial's recorded conditions as stored (JSON), decoded here only for a database client's
    histograms (a key no file workload's info has)."""
    recorded: TrialInfo | str = info
    latency: dict[str, HdrHistogram] = {}
    if t.status == "ok" and '"latency_hdr"' in info:
        recorded = TrialInfo.from_json(json.loads(info))
        latency = {op: hdr.decode(text) for op, text in (recorded.latency_hdr or {}).items()}
    fields = (t.id, t.cell_id, t.repetition, t.status, t.category, t.stderr, recorded, latency)
    return StoredTrial(*fields, t.ended_at, t.started_at)


def _timelines(
    logs: list[tuple[str, int, str]], cells: tuple[StoredCell, ...], trials: tuple[StoredTrial, ...]
) -> tuple[Timeline, ...]:
    workload = {c.cell_id: c.cell.workload for c in cells}
    trial = {t.id: t for t in trials}
    out = []
    for cell_id, trial_id, text in logs:
        w, t = workload.get(cell_id), trial[trial_id]
        interval = registry.of(w).lat_log_ms(w) if w is not None else None
        if interval is None:
            continue  # a workload type that keeps no latency log of fio's
        every = int(t.info.lat_log_ms or interval)
        try:
            found = fio_log.intervals(fio_log.parse(text), every)
        except fio_log.FioLogError:
            continue  # a log a later fio writes otherwise: the trial's results stand without it
        out.append(Timeline(cell_id, trial_id, t.repetition, every, tuple(found)))
    return tuple(out)


def _completions(store: Store, run_id: str) -> tuple[Completion, ...]:
    """fio's histograms of every successful trial, merged per cell and direction: each trial's own as it was
    recorded (``fio.BINS_LOG``), or, for a trial recorded before layerbench kept them, out of its raw output."""
    parts: dict[tuple[str, str], list[tuple[np.ndarray, np.ndarray]]] = {}
    trials: dict[tuple[str, str], set[int]] = {}
    for cell_id, trial_id, direction, ns, counts in _kept_bins(store, run_id):
        parts.setdefault((cell_id, direction), []).append((ns, counts))
        trials.setdefault((cell_id, direction), set()).add(trial_id)
    for cell_id, trial_id, raw in store.raw_outputs(run_id, without_log=fio.BINS_LOG):
        try:
            bins = fio.completion_bins(fio.parse(raw))
        except fio.FioParseError:
            continue  # not fio's output (another tool's trial): no histogram
        for direction, merged in bins.items():
            ns = np.array(sorted(merged), dtype=np.int64)
            parts.setdefault((cell_id, direction), []).append((ns, np.array([merged[int(v)] for v in ns], np.int64)))
            trials.setdefault((cell_id, direction), set()).add(trial_id)
    # In the order their first trial ran, kept or parsed, as when every output was parsed in the trials' order.
    first = sorted(parts, key=lambda key: min(trials[key]))
    return tuple(Completion(c, d, len(trials[(c, d)]), *_summed(parts[(c, d)])) for c, d in first)


def _kept_bins(store: Store, run_id: str) -> Iterator[tuple[str, int, str, np.ndarray, np.ndarray]]:
    """(cell, trial, direction, ns, counts) of each histogram the run's trials kept (``fio.bins_text``)."""
    for cell_id, trial_id, text in store.logs(run_id, fio.BINS_LOG):
        for line in text.splitlines():
            direction, steps, counts = line.split(" ")
            yield cell_id, trial_id, direction, np.cumsum(_unpacked(steps)), _unpacked(counts)


def _unpacked(text: str) -> np.ndarray:
    """``fio.bins_text``'s int64s."""
    return np.frombuffer(zlib.decompress(base64.b64decode(text)), dtype="<i8").astype(np.int64)


def _summed(bins: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Histograms added: each latency once (ascending), with every histogram's count of it."""
    ns = np.concatenate([b[0] for b in bins])
    counts = np.concatenate([b[1] for b in bins])
    if not len(ns):
        return ns, counts
    order = np.argsort(ns, kind="stable")
    ns, counts = ns[order], counts[order]
    starts = np.flatnonzero(np.diff(ns, prepend=ns[0] - 1))
    return ns[starts], np.add.reduceat(counts, starts)


COMPLETION_COLUMNS = ["cell_id", "direction", "trials", "ns", "count"]


def _cached_completions(store: Store, run_id: str) -> tuple[Completion, ...]:
    """``_completions`` through the run's cache (store/cache.py), as one row per bin."""
    table = cache.frame(store, run_id, "completions", lambda: completions_frame(_completions(store, run_id)))
    return completions_of(table)


NO_BIN = -1  # the one row of a histogram without bins (fio's plain JSON has none): ns NO_BIN, count 0


def completions_frame(completions: tuple[Completion, ...]) -> pd.DataFrame:
    """One row per bin: COMPLETION_COLUMNS; cell and direction as categoricals (millions of rows, few texts)."""
    sizes = [max(len(c.ns), 1) for c in completions]
    none = np.array([NO_BIN], dtype=np.int64), np.array([0], dtype=np.int64)
    bins = [(c.ns, c.counts) if len(c.ns) else none for c in completions]
    empty = np.array([], dtype=np.int64)
    return pd.DataFrame(
        {
            "cell_id": pd.Categorical(np.repeat(np.array([c.cell_id for c in completions], dtype=object), sizes)),
            "direction": pd.Categorical(np.repeat(np.array([c.direction for c in completions], dtype=object), sizes)),
            "trials": np.repeat(np.array([c.trials for c in completions], dtype=np.int64), sizes),
            "ns": np.concatenate([b[0] for b in bins]) if bins else empty,
            "count": np.concatenate([b[1] for b in bins]) if bins else empty,
        },
        columns=COMPLETION_COLUMNS,
    )


def completions_of(table: pd.DataFrame) -> tuple[Completion, ...]:
    """``completions_frame`` read back: a histogram's rows are contiguous, in order."""
    if table.empty:
        return ()
    cells, directions = pd.Categorical(table["cell_id"]), pd.Categorical(table["direction"])
    cell_codes, direction_codes = cells.codes, directions.codes
    change = np.ones(len(table), dtype=bool)
    change[1:] = (cell_codes[1:] != cell_codes[:-1]) | (direction_codes[1:] != direction_codes[:-1])
    starts = np.flatnonzero(change)
    ends = [*starts[1:].tolist(), len(table)]
    cell_names = [str(c) for c in cells.categories]
    direction_names = [str(d) for d in directions.categories]
    ns, counts = table["ns"].to_numpy(np.int64), table["count"].to_numpy(np.int64)
    trials = table["trials"].to_numpy(np.int64)
    out = []
    for first, end in zip(starts.tolist(), ends, strict=True):
        bins = slice(end, end) if ns[first] == NO_BIN else slice(first, end)
        cell, direction = cell_names[cell_codes[first]], direction_names[direction_codes[first]]
        out.append(Completion(cell, direction, int(trials[first]), ns[bins], counts[bins]))
    return tuple(out)
