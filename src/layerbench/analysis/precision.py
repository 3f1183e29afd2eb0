"""When has a cell been measured enough? Its 95% CI is narrow enough, or it hit the cap.

Looking after every trial and stopping once the interval is narrow enough picks
the moments the spread happens to look small, so the usual 95% interval at the
stop covers the true mean less often (about 92% in a simulation with min 3, cap
10: tests/unit/test_precision.py). The correction is Bonferroni's over the looks
(``confidence``): with K possible stops, every look's interval is taken at
1 - 0.05/K, both to decide and to report. Whichever look stops, the reported
interval is one of K intervals that together miss with probability at most
K x 0.05/K = 5%, so it is a valid 95% interval whatever the stopping rule did;
no assumption beyond each interval's own. We chose it over group-sequential
boundaries (Pocock, O'Brien-Fleming: tuned to tests of a difference, not to a
width target) and over Stein's two-stage rule (exact only with an interval
built from the first stage's variance alone, which the rest of the analysis
does not use): it is provably valid, simple to state, and costs trials only
where the target is met early. Its price is a wider interval and more trials
than the nominal rule (about 4.5 instead of 3.2 trials on a steady cell).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from layerbench.analysis.stats import t_quantile
from layerbench.spec.models import Trials

NOMINAL = 0.95


def relative_halfwidth(values: Sequence[float], level: float = NOMINAL) -> float:
    """Half-width of the Student-t confidence interval of the mean, as a share of the mean."""
    if len(values) < 2:
        return float("inf")
    arr = np.asarray(values, dtype=float)
    mean = float(arr.mean())
    if mean == 0:
        return float("inf")
    sem = float(arr.std(ddof=1)) / len(arr) ** 0.5
    return t_quantile(level, len(arr) - 1) * sem / abs(mean)


def confidence(trials: Trials) -> float:
    """The confidence of every interval of a run: Bonferroni's over its possible stops under a precision
    target, so the interval reported at the stop is a valid 95% one; 0.95 for a fixed count of trials."""
    if trials.precision is None:
        return NOMINAL
    looks = trials.repetitions - trials.first_rounds + 1
    return 1 - (1 - NOMINAL) / looks


def precise_enough(values: Sequence[float], target: float, min_n: int, level: float = NOMINAL) -> bool:
    return len(values) >= min_n and relative_halfwidth(values, level) <= target
