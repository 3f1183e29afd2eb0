"""The history of one comparison across runs: the same two cells, judged in each run that has both.

A comparison is named across runs by its two stacks' labels and the workload's name (``subject``,
``reference``, ``workload``: e.g. loop/ext4/docker:overlay2/writable-layer against
loop/ext4/docker:overlay2/volume on RW): a run's cell ids change with any setting of its spec, its labels
only with the layers. Each run's point is the ratio subject / reference with its interval and verdict, taken
from what that run's own page shows where it shows the pair (a finding: a layer against the one beneath it;
or the results table: a cell against the run's baseline), so the history and the run agree. Any other pair
is judged from the run's rounds alone (paired by round where two rounds ran both, a family of one: no
correction over the run's other comparisons), and says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from layerbench.analysis import comparisons, precision
from layerbench.analysis.stats import Ratio
from layerbench.analysis.verdicts import judge
from layerbench.records.run import RunRow
from layerbench.report.terminal import plain, run_json
from layerbench.report.view import RunView
from layerbench.serve.query import FILTERS, BadRequest, RunFilter, run_filter
from layerbench.store.db import Store

PAIR = ("subject", "reference", "workload")
HISTORY_PARAMS = (*PAIR, *(f for f in FILTERS if f != "layer"))
FROM_FINDING, FROM_BASELINE, FROM_PAIR = "finding", "baseline", "pair"
SOURCES = {
    FROM_FINDING: "the run's finding (a layer against the one beneath it)",
    FROM_BASELINE: "the run's results table (a cell against the run's baseline)",
    FROM_PAIR: "judged alone from the run's rounds (no correction over the run's other comparisons)",
}


@dataclass(frozen=True)
class Pair:
    subject: str  # the stack judged, by its label
    reference: str  # the stack it is judged against
    workload: str

    def as_json(self) -> dict[str, str]:
        return {"subject": self.subject, "reference": self.reference, "workload": self.workload}


@dataclass(frozen=True)
class Point:
    run: RunRow
    metric: str
    ratio: Ratio  # subject / reference
    verdict: str  # slower | faster | equivalent | undecided
    note: str  # why there is no interval, or that it is unpaired
    source: str  # FROM_FINDING | FROM_BASELINE | FROM_PAIR
    confidence: float  # of the interval
    changed: bool = False  # its verdict differs from the point before it


def pair_and_filter(given: Mapping[str, str]) -> tuple[Pair, RunFilter]:
    missing = [name for name in PAIR if name not in given]
    if missing:
        raise BadRequest(
            f"missing {', '.join(missing)}: a history names its comparison by subject and reference (stack labels, "
            "e.g. loop/ext4/docker:overlay2/volume) and workload (e.g. RW)"
        )
    return Pair(given["subject"], given["reference"], given["workload"]), run_filter(given)


def runs_with(store: Store, pair: Pair, runs: list[RunRow]) -> list[RunRow]:
    """The ``runs`` that have both of the pair's cells, oldest first."""
    wanted = {(pair.subject, pair.workload), (pair.reference, pair.workload)}
    found = [r for r in runs if wanted <= {(c.stack_label, c.workload) for c in store.cells(r.id)}]
    return sorted(found, key=lambda r: (r.started_at, r.id))


def history(pair: Pair, runs: list[RunRow], view_of: Callable[[RunRow], RunView]) -> list[Point]:
    """One point per run (``runs`` in order) that has the pair, each marked where its verdict changed."""
    return marked([p for run in runs if (p := point(view_of(run), pair)) is not None])


def marked(points: list[Point]) -> list[Point]:
    """``points`` with ``changed`` set where a point's verdict differs from the one before it."""
    return [replace(p, changed=i > 0 and points[i - 1].verdict != p.verdict) for i, p in enumerate(points)]


def point(v: RunView, pair: Pair) -> Point | None:
    """The pair in one run: as its page shows it where it does, else judged from its rounds."""
    run, level = v.data.run, precision.confidence(v.data.trials_rule)
    for f in v.findings:
        if (f.subject, f.reference, f.workload) == (pair.subject, pair.reference, pair.workload):
            metric = next((r.metric for r in v.results if (r.stack_label, r.workload) == (f.subject, f.workload)), "")
            return Point(run, metric, f.ratio, f.verdict, f.note, FROM_FINDING, f.confidence)
    cells = {(c.stack_label, c.workload): c for c in v.data.cells}
    subject, reference = cells.get((pair.subject, pair.workload)), cells.get((pair.reference, pair.workload))
    if subject is None or reference is None:
        return None
    for r in v.results:
        if r.cell_id == subject.cell_id and subject.baseline_cell_id == reference.cell_id and not r.is_baseline:
            return Point(run, r.metric, r.ratio, r.verdict, r.ratio_note, FROM_BASELINE, level)
    metric = comparisons.headline_metric(subject.cell.workload)
    rounds = comparisons.rounds_of(v.data)
    sequential = v.data.trials_rule.sequential
    pair_rounds = rounds.get((subject.cell_id, metric), {}), rounds.get((reference.cell_id, metric), {})
    j = judge([comparisons.compared(*pair_rounds, sequential)], level, sequential)[0]
    note = j.note or ("" if j.paired else "unpaired: the rounds do not pair")
    return Point(run, metric, j.ratio, j.verdict, note, FROM_PAIR, level)


def history_json(pair: Pair, f: RunFilter, points: list[Point]) -> dict[str, Any]:
    return {
        "comparison": pair.as_json(),
        "filters": {k: v for k, v in f.as_json().items() if k != "layer"},
        "points": [
            {
                "run": run_json(p.run),
                "metric": p.metric,
                "ratio": plain(p.ratio),
                "verdict": p.verdict,
                "note": p.note,
                "from": p.source,
                "confidence": p.confidence,
                "verdict_changed": p.changed,
            }
            for p in points
        ],
    }
