"""Summary statistics and ratios to the baseline, computed at read time.

Statistics come from scipy: Student-t intervals for means, Welch's t-test for
whether a cell differs from its baseline, and Fieller's interval for the
ratio of two independent means (it stays honest at the small n benchmarks
have, where a bootstrap does not). The t distribution is taken from
scipy.special's ufuncs, not scipy.stats' wrappers: the same numbers (a unit
test holds them to scipy.stats), without ~0.5 ms of argument checking per
call, which made `show` of a 10,000-cell run take 15 s.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import numpy as np
import pandas as pd
from scipy import special

NAN = float("nan")


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    std: float
    min: float
    max: float
    cv: float
    median: float
    ci_low: float
    ci_high: float

    @property
    def ci_halfwidth_pct(self) -> float:
        return 100 * (self.ci_high - self.ci_low) / 2 / self.mean if self.n >= 2 and self.mean else NAN


@dataclass(frozen=True)
class Ratio:
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float

    @property
    def significant(self) -> bool:
        return self.p_value == self.p_value and self.p_value < 0.05


def per_trial(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One value per trial: the metric summed over jobs and directions (IOPS of a mixed job)."""
    rows = frame[frame["metric"] == metric]
    return rows.groupby(["cell_id", "trial_id"], as_index=False)["value"].sum()


def summarize(values: np.ndarray | list[float], confidence: float = 0.95) -> Summary:
    """``confidence`` above 0.95 for cells a precision target stopped (``precision.confidence``)."""
    arr = np.asarray(values, dtype=float)
    n = len(arr)
    if n == 0:
        return Summary(0, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN)
    mean = float(arr.mean())
    std = float(arr.std(ddof=1)) if n > 1 else NAN
    low, high = (NAN, NAN)
    if n > 1:
        half = t_quantile(confidence, n - 1) * std / math.sqrt(n)
        low, high = (mean - half, mean + half) if std > 0 else (mean, mean)
    cv = std / mean if n > 1 and mean else NAN
    return Summary(n, mean, std, float(arr.min()), float(arr.max()), cv, float(np.median(arr)), float(low), float(high))


def ratio(cell: np.ndarray | list[float], base: np.ndarray | list[float], confidence: float = 0.95) -> Ratio:
    """Ratio of means with Fieller's interval (95% unless told) and Welch's p-value; NaN where n < 2."""
    a, b = np.asarray(cell, dtype=float), np.asarray(base, dtype=float)
    if len(a) == 0 or len(b) == 0 or b.mean() == 0:
        return Ratio(NAN, NAN, NAN, NAN)
    q = float(a.mean() / b.mean())
    if len(a) < 2 or len(b) < 2:
        return Ratio(q, NAN, NAN, NAN)
    low, high = _fieller(a, b, confidence)
    p = _welch_p(a, b) if a.std() + b.std() > 0 else _exact_p(a, b)
    return Ratio(q, low, high, p)


def _fieller(a: np.ndarray, b: np.ndarray, confidence: float) -> tuple[float, float]:
    ma, mb = a.mean(), b.mean()
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    t = t_quantile(confidence, min(len(a), len(b)) - 1)
    g = t * t * vb / (mb * mb)
    if g >= 1:  # the baseline's own interval includes zero: the ratio is unbounded
        return NAN, NAN
    q = ma / mb
    half = (t / abs(mb)) * math.sqrt(va * (1 - g) + q * q * vb)
    return float((q - half) / (1 - g)), float((q + half) / (1 - g))


def t_quantile(confidence: float, df: float) -> float:
    """The two-sided ``confidence`` quantile of Student's t with ``df`` degrees of freedom."""
    return float(special.stdtrit(df, 0.5 + confidence / 2))


def _welch_p(a: np.ndarray, b: np.ndarray) -> float:
    """Welch's two-sided p-value (scipy.stats.ttest_ind with equal_var=False)."""
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    t = (a.mean() - b.mean()) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va * va / (len(a) - 1) + vb * vb / (len(b) - 1))
    return float(2 * special.stdtr(df, -abs(t)))


def _exact_p(a: np.ndarray, b: np.ndarray) -> float:
    return 1.0 if a.mean() == b.mean() else 0.0


def cell_values(frame: pd.DataFrame, metric: str) -> dict[str, np.ndarray]:
    """Per cell, the values of its trials (``per_trial``) in the order of their ids."""
    trials = per_trial(frame, metric)
    return runs_of(trials["cell_id"], trials["value"].to_numpy())


def runs_of(keys: pd.Series, values: np.ndarray) -> dict[str, np.ndarray]:
    """``values`` split where ``keys`` changes: one array per key, for keys whose rows are contiguous (sorted).
    One split, not a pandas group per cell: 10,000 groups took 0.4 s each time."""
    codes, names = pd.factorize(keys)  # numbered in order of appearance
    starts = np.flatnonzero(np.diff(codes, prepend=-1))
    if len(starts) != len(names):
        raise ValueError("the rows of a key are not contiguous")
    return dict(zip(names, np.split(values, starts[1:]), strict=True)) if len(values) else {}


# The same statistics as tables, per direction, for exports and notebooks.

SUMMARY_COLUMNS = ["cell_id", "metric", "direction", *(f.name for f in fields(Summary))]
RATIO_COLUMNS = ["cell_id", "baseline_cell_id", "metric", "direction", "n", "n_baseline"] + [
    f.name for f in fields(Ratio)
]


def per_trial_by_direction(frame: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One value per trial and direction, summed over the trial's jobs.

    Adapters emit one row per job and no aggregate row (fio with
    group_reporting has one job, named after the workload; a job file has
    several), so the sum is the trial's total and counts nothing twice.
    """
    rows = frame[frame["metric"] == metric]
    return rows.groupby(["cell_id", "trial_id", "direction"], as_index=False)["value"].sum()


def summary_frame(frame: pd.DataFrame, metrics: list[str], confidence: float = 0.95) -> pd.DataFrame:
    """``summarize`` per (cell_id, metric, direction) of a ``Store.samples_frame``."""
    rows = []
    for metric in metrics:
        trials = per_trial_by_direction(frame, metric)
        for (cell, direction), group in trials.groupby(["cell_id", "direction"]):
            summary = summarize(group["value"].to_numpy(), confidence)
            rows.append({"cell_id": cell, "metric": metric, "direction": direction, **asdict(summary)})
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def ratios(frame: pd.DataFrame, metric: str, direction: str, confidence: float = 0.95) -> pd.DataFrame:
    """Each cell's mean over its baseline cell's mean: ``ratio`` (Fieller CI, Welch p) per cell.

    A cell whose baseline has no successful trials gets NaN, not a number.
    """
    trials = per_trial_by_direction(frame, metric)
    trials = trials[trials["direction"] == direction]
    values = runs_of(trials["cell_id"], trials["value"].to_numpy())
    rows = []
    for cell, base in frame[["cell_id", "baseline_cell_id"]].drop_duplicates().itertuples(index=False):
        base_id = base if isinstance(base, str) else None  # NULL reads back as None or NaN
        mine, theirs = values.get(cell, np.array([])), values.get(base_id, np.array([]))
        head = {"cell_id": cell, "baseline_cell_id": base_id, "metric": metric, "direction": direction}
        rows.append({**head, "n": len(mine), "n_baseline": len(theirs), **asdict(ratio(mine, theirs, confidence))})
    return pd.DataFrame(rows, columns=RATIO_COLUMNS)
