"""What a run found, a line per layer: each layer against the one beneath it, in plain words.

The results table gives every cell against the run's baseline. A reader wants
what each layer costs: a container placement against native on the same
filesystem and device, a filesystem against the raw device under it. Each such
pair is judged by its ratio paired by round (analysis.stats.paired_ratio: the
rounds share the machine's state, so pairing cancels it), and called a
difference only when it is significant and at least MATERIAL: a 2% effect that
flips sign between two runs of the same spec is no finding to act on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from layerbench.analysis.overhead import CellResult, headline_metric
from layerbench.analysis.stats import Ratio, paired_ratio, per_trial
from layerbench.spec.models import EngineSpec, FilesystemSpec, IozoneWorkload, PlacementSpec, StackSpec, Workload
from layerbench.store.read import RunData

Rounds = dict[tuple[str, str], dict[int, float]]
IOZONE_OP = "iozone:"  # a metric key of findings only: one IOzone operation's geometric mean in a trial
MATERIAL = 0.05  # smaller significant differences are called "≈": they do not survive a rerun here
# Flags that say a number may not be the layer's (a cache answered, the host was busy, the baseline failed):
# they mark a finding. "noisy" and "bottleneck" describe the measurement, not its truth: the interval and
# the CPU are already in the number.
DOUBTS = frozenset({"faster-than-physics", "device-accounting", "contended", "not-comparable", "volatile-mount"})


@dataclass(frozen=True)
class Finding:
    subject: str  # the layer judged, as its stack's label
    reference: str  # the stack beneath it that it is judged against
    workload: str
    ratio: Ratio  # subject / reference, paired by round
    verdict: str  # "slower" | "faster" | "same" (no material difference) | "undecided" (fewer than 2 rounds)
    flagged: bool  # a doubt (DOUBTS) was flagged on the subject or its reference

    @property
    def change_pct(self) -> float:
        return 100 * (self.ratio.ratio - 1)


def of_run(data: RunData, results: Sequence[CellResult]) -> list[Finding]:
    """Every cell that has a layer beneath it in this run, judged against that layer's cell."""
    by_stack = {(c.stack, c.workload): c for c in data.cells}
    flagged = {r.cell_id for r in results if any(f.name in DOUBTS for f in r.flags)}
    rounds = _rounds(data)
    found = []
    for c in data.cells:
        beneath = reference(c.stack)
        ref = by_stack.get((beneath, c.workload)) if beneath is not None else None
        if ref is None:
            continue
        doubted = bool({c.cell_id, ref.cell_id} & flagged)
        for metric, name in _judged(c.cell.workload, c.workload, rounds, c.cell_id):
            r = paired_ratio(rounds.get((c.cell_id, metric), {}), rounds.get((ref.cell_id, metric), {}))
            if r.ratio == r.ratio:
                found.append(Finding(c.stack_label, ref.stack_label, name, r, verdict(r), doubted))
    return found


def _judged(w: Workload, name: str, rounds: Rounds, cell_id: str) -> list[tuple[str, str]]:
    """(metric, what a finding calls it): the headline; for IOzone also each operation, whose costs differ
    (seed 004 judged them one by one; a geometric mean over all of them hides one that differs)."""
    out = [(headline_metric(w), name)]
    if isinstance(w, IozoneWorkload):
        ops = sorted(m.split(":", 1)[1] for (cell, m) in rounds if cell == cell_id and m.startswith(IOZONE_OP))
        out += [(f"{IOZONE_OP}{op}", f"{name} {op}") for op in ops]
    return out


def reference(stack: StackSpec) -> StackSpec | None:
    """The layer beneath: a tuned container (seed 001) → the same container with Docker's defaults; a
    container's or VM's placement → native host-dir on the same filesystem (same limits and servers); a
    native filesystem → the raw device; the raw device has none."""
    if stack.tuning != "default":
        return stack.model_copy(update={"tuning": "default"})
    if stack.engine.kind != "native":
        return stack.model_copy(update={"engine": EngineSpec(), "placement": PlacementSpec(kind="host-dir")})
    if stack.filesystem.type != "none":
        return stack.model_copy(update={"filesystem": FilesystemSpec(), "placement": PlacementSpec(kind="raw")})
    return None


def verdict(r: Ratio) -> str:
    if r.ci_low != r.ci_low:
        return "undecided"
    if not r.significant or abs(math.log(r.ratio)) < math.log1p(MATERIAL):
        return "same"
    return "slower" if r.ratio < 1 else "faster"


def summary_lines(findings: Sequence[Finding]) -> list[str]:
    """One line per layer: its material differences with their intervals, then where it is the same."""
    by_subject: dict[tuple[str, str], list[Finding]] = {}
    for f in findings:
        by_subject.setdefault((f.subject, f.reference), []).append(f)
    return [_line(subject, ref, fs) for (subject, ref), fs in by_subject.items()]


def _line(subject: str, ref: str, fs: list[Finding]) -> str:
    parts = [_difference(f) for f in fs if f.verdict in ("slower", "faster")]
    same = [f.workload for f in fs if f.verdict == "same"]
    if same:
        parts.append(f"≈ on {', '.join(same)}")
    undecided = [f.workload for f in fs if f.verdict == "undecided"]
    if undecided:
        parts.append(f"undecided on {', '.join(undecided)} (one round)")
    return f"{subject} vs {ref}: " + "; ".join(parts)


def _difference(f: Finding) -> str:
    r = f.ratio
    text = f"{f.change_pct:+.0f}% on {f.workload} (×{r.ratio:.2f}, 95% CI {r.ci_low:.2f}-{r.ci_high:.2f})"
    return text + (" [flagged]" if f.flagged else "")


def _rounds(data: RunData) -> Rounds:
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
    iozone = {c.cell_id for c in data.cells if isinstance(c.cell.workload, IozoneWorkload)}
    if iozone:
        for (cell, trial, op), value in _operation_means(data.samples, iozone).items():
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
