"""A run's comparisons, all of them at once: one family, one correction, one interval per comparison.

A run prints two kinds of comparison: each cell against the run's baseline (the results table) and each
layer against the one beneath it (the findings). Where the two are the same pair of cells on the same
metric they are one comparison with one ratio, one interval and one verdict; all of them together are
the family over which analysis/verdicts.py corrects the intervals (their false coverage rate). Each is
paired by round where at least two rounds ran both cells, unpaired (Welch on the logs) otherwise, and says
which.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from layerbench.analysis import looks, precision
from layerbench.analysis.stats import LogRatio, paired_logs, per_trial, welch_logs
from layerbench.analysis.verdicts import Judged, judge
from layerbench.spec.engines.runtimes import DEFAULT_RUNTIME
from layerbench.spec.models import (
    EngineSpec,
    FilesystemSpec,
    PlacementSpec,
    StackSpec,
    Workload,
)
from layerbench.spec.traits import traits
from layerbench.store.read import RunData
from layerbench.workloads import registry

Rounds = dict[tuple[str, str], dict[int, float]]  # (cell, metric) → {repetition: the trial's value}
Key = tuple[str, str, str]  # (subject cell, reference cell, metric)
IOZONE_OP = "iozone:"  # a metric key of findings only: one IOzone operation's geometric mean in a trial


@dataclass(frozen=True)
class LayerPair:
    """A cell and the cell of the layer beneath it, on one metric (what a finding judges)."""

    subject: str  # cell ids
    reference: str
    metric: str
    name: str  # the workload, or "<workload> <operation>" for one of IOzone's


@dataclass(frozen=True)
class Family:
    judged: dict[Key, Judged]
    layers: list[LayerPair]
    confidence: float  # of every interval shown, and 1 - the corrected error rate of every verdict


def headline_metric(workload: Workload) -> str:
    """ops/s for databases (all instances together), personalities and job files; IOPS for random I/O,
    bandwidth for sequential I/O; IOzone's geometric mean over its surface: each workload type's own."""
    return registry.of(workload).headline(workload)


def of_run(data: RunData) -> Family:
    """Every comparison the run prints, judged together at the confidence its trials rule needs."""
    rounds = rounds_of(data)
    keys: dict[Key, None] = {}
    for c in data.cells:
        if c.baseline_cell_id and not c.is_baseline:
            keys[(c.cell_id, c.baseline_cell_id, headline_metric(c.cell.workload))] = None
    layers = layer_pairs(data, rounds)
    keys.update({(p.subject, p.reference, p.metric): None for p in layers})
    sequential = data.trials_rule.sequential
    logs = [compared(rounds.get((a, m), {}), rounds.get((b, m), {}), sequential) for a, b, m in keys]
    level = precision.confidence(data.trials_rule)
    judged = judge(logs, level, sequential)
    return Family(dict(zip(keys, judged, strict=True)), layers, level)


def compared(cell: dict[int, float], base: dict[int, float], sequential: bool = False) -> LogRatio:
    """Paired by round where two rounds ran both; unpaired where they did not (and each side has two trials).
    ``sequential`` (a budget run): paired, on the rounds of its last look (analysis/looks.py), the first that
    ran both; the rounds after it wait for the next look."""
    if sequential:  # before the first look (one round), that round: a ratio without an interval
        both = sorted(set(cell) & set(base))
        read = both[: looks.last(len(both)) or len(both)]
        return paired_logs({r: cell[r] for r in read}, {r: base[r] for r in read})
    if len(set(cell) & set(base)) >= 2 or min(len(cell), len(base)) < 2:
        return paired_logs(cell, base)
    return welch_logs(list(cell.values()), list(base.values()))


def layer_pairs(data: RunData, rounds: Rounds) -> list[LayerPair]:
    """Every cell that has a layer beneath it in this run, with that layer's cell, per judged metric."""
    by_stack = {(c.stack, c.workload): c for c in data.cells}
    out = []
    for c in data.cells:
        ref = next((by_stack[(b, c.workload)] for b in references(c.stack) if (b, c.workload) in by_stack), None)
        if ref is None:
            continue
        for metric, name in _judged(c.cell.workload, headline_metric(c.cell.workload), c.workload, rounds, c.cell_id):
            out.append(LayerPair(c.cell_id, ref.cell_id, metric, name))
    return out


def _judged(w: Workload, headline: str, name: str, rounds: Rounds, cell_id: str) -> list[tuple[str, str]]:
    """(metric, what a finding calls it): the headline; for IOzone also each operation, whose costs differ
    (seed 004 judged them one by one; a geometric mean over all of them hides one that differs)."""
    out = [(headline, name)]
    if registry.of(w).surface:
        ops = sorted(m.split(":", 1)[1] for (cell, m) in rounds if cell == cell_id and m.startswith(IOZONE_OP))
        out += [(f"{IOZONE_OP}{op}", f"{name} {op}") for op in ops]
    return out


def reference(stack: StackSpec) -> StackSpec | None:
    """The layer beneath (``references``' first)."""
    return next(iter(references(stack)), None)


def references(stack: StackSpec) -> list[StackSpec]:
    """The layer beneath, the nearest first where there are several: a tuned container (seed 001) → the same
    container with Docker's defaults; a container under another OCI runtime → the same under runc, the
    default; a container's or VM's placement → native host-dir on the same filesystem (same limits and
    servers); a native filesystem → the raw device; a raw export of a Ceph cluster layerbench builds → the
    same cluster healthy, then with one replica (spec/transports/rbd.py: ClusterSpec.beneath); any other raw
    device has none."""
    if stack.tuning != "default":
        return [stack.model_copy(update={"tuning": "default"})]
    if stack.engine.runtime not in (None, DEFAULT_RUNTIME):
        return [stack.model_copy(update={"engine": stack.engine.model_copy(update={"runtime": DEFAULT_RUNTIME})})]
    if traits(stack.engine.kind).layer:
        return [stack.model_copy(update={"engine": EngineSpec(), "placement": PlacementSpec(kind="host-dir")})]
    if stack.filesystem.type != "none":
        return [stack.model_copy(update={"filesystem": FilesystemSpec(), "placement": PlacementSpec(kind="raw")})]
    remote = stack.device.remote
    below = remote.beneath() if remote is not None else ()
    return [stack.model_copy(update={"device": stack.device.model_copy(update={"remote": r})}) for r in below]


def rounds_of(data: RunData) -> Rounds:
    """(cell, metric) → {repetition: the trial's value}: headline metrics, and IOzone's operations (each the
    geometric mean of its points in the trial, as the headline is of all of them)."""
    if data.samples.empty:
        return {}
    rep = {t.id: t.repetition for t in data.trials}
    out: Rounds = {}
    for metric in {headline_metric(c.cell.workload) for c in data.cells}:
        frame: pd.DataFrame = per_trial(data.samples, metric)
        columns = (frame[k].tolist() for k in ("cell_id", "trial_id", "value"))
        for cell, trial, value in zip(*columns, strict=True):
            out.setdefault((cell, metric), {})[rep[trial]] = value
    surfaces = {c.cell_id for c in data.cells if registry.of(c.cell.workload).surface}
    if surfaces:
        for (cell, trial, op), value in _operation_means(data.samples, surfaces).items():
            out.setdefault((cell, f"{IOZONE_OP}{op}"), {})[rep[trial]] = value
    return out


def _operation_means(samples: pd.DataFrame, cells: set[str]) -> dict[tuple[str, int, str], float]:
    """(cell, trial, operation) → the geometric mean of its points. Summed in Python rather than by a pandas
    groupby on string keys, which crashed the interpreter in the test VM (analysis/explain.py)."""
    rows = samples[(samples["metric"] == "bw") & samples["cell_id"].isin(cells) & (samples["value"] > 0)]
    logs = np.log(rows["value"].to_numpy(dtype=float)).tolist()
    keys = zip(rows["cell_id"].tolist(), rows["trial_id"].tolist(), rows["direction"].tolist(), strict=True)
    sums: dict[tuple[str, int, str], list[float]] = {}
    for (cell, trial, op), log in zip(keys, logs, strict=True):
        acc = sums.setdefault((str(cell), int(trial), str(op)), [0.0, 0.0])
        acc[0] += log
        acc[1] += 1
    return {key: math.exp(total / n) for key, (total, n) in sums.items()}
