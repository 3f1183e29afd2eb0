"""Which cells a run's next round still needs under a precision target (``trials.precision``): the rule
api.py hands the run stage, judged on the samples recorded so far (analysis/precision.py says why its
intervals are wider than 95%)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from layerbench.analysis.comparisons import headline_metric
from layerbench.analysis.precision import confidence, precise_enough
from layerbench.analysis.stats import cell_values
from layerbench.spec.models import Cell, Experiment

if TYPE_CHECKING:
    import pandas as pd


def still_imprecise(exp: Experiment, cells: list[Cell], frame: pd.DataFrame) -> list[Cell]:
    """The cells whose headline (or ``trials.metric``) interval is not yet narrow enough, given the samples
    recorded so far (``frame``: the store's samples frame of the run); every cell without a target."""
    target = exp.trials.precision
    if target is None:
        return cells
    values: dict[str, dict] = {}  # metric → cell id → its per-trial values
    level = confidence(exp.trials)  # wider than 95%: looking after every round (analysis/precision.py)
    imprecise = []
    for c in cells:
        metric = exp.trials.metric if exp.trials.metric != "headline" else headline_metric(c.workload)
        if metric not in values:
            values[metric] = cell_values(frame, metric) if not frame.empty else {}
        if not precise_enough(list(values[metric].get(c.id, [])), target, exp.trials.first_rounds, level):
            imprecise.append(c)
    return imprecise
