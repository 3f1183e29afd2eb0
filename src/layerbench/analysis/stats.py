"""Summary statistics and ratios to the baseline, computed at read time.

Statistics come from scipy: Student-t intervals for means; ratios on the log
scale, paired by round where rounds pair (``paired_logs``) or Welch's otherwise
(``welch_logs``), their interval and p-value from one t statistic
(``log_ratio``), which is what every verdict shows (analysis/verdicts.py);
and, for notebooks and exports, Fieller's interval for the ratio of two
independent means with Welch's p-value (``ratio``, ``ratios``). The t distribution is taken from
scipy.special's ufuncs, not scipy.stats' wrappers: the same numbers (a unit
test holds them to scipy.stats), without ~0.5 ms of argument checking per
call, which made `show` of a 10,000-cell run take 15 s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING

import numpy as np

from layerbench.analysis import anytime
from layerbench.analysis.lazy_special import special

if TYPE_CHECKING:  # a run's start needs t quantiles (analysis/precision.py), not pandas: seconds under emulation
    import pandas as pd

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


def summarize(values: np.ndarray | list[float], confidence: float = 0.95, sequential: bool = False) -> Summary:
    """``sequential``: the data decided when the cell stopped (``Trials.sequential``), so its interval is the
    mean's confidence sequence (analysis/anytime.py), which holds at any stop; else Student's t."""
    return summaries([values], confidence, sequential)[0]


def ratio(cell: np.ndarray | list[float], base: np.ndarray | list[float], confidence: float = 0.95) -> Ratio:
    """Ratio of means with Fieller's interval (95% unless told) and Welch's p-value; NaN where n < 2."""
    return ratios_of([(cell, base)], confidence)[0]


def paired_ratio(cell: dict[int, float], base: dict[int, float], confidence: float = 0.95) -> Ratio:
    """Ratio of a cell to its baseline from the rounds both ran in, paired by round (keys: repetition).

    Each round's ratio cancels what the round shared (the machine's load then, the freshly built
    lower layers); their geometric mean is the ratio, with a Student-t interval and p-value on the
    logarithms. NaN where fewer than two rounds pair up, a value is not positive, or every round gave
    the same ratio (no spread: nothing to judge the next round's by, so no interval and no p-value).
    """
    return log_ratio(paired_logs(cell, base), confidence)


# A spread of log ratios this small is rounding, not measurement: identical ratios computed through
# different values differ in the 16th digit, and a t statistic over that noise is any number at all.
NO_SPREAD = 1e-12


@dataclass(frozen=True)
class LogRatio:
    """A comparison on the log scale, the form every verdict is decided in (analysis/verdicts.py): the mean
    log ratio, its standard error and degrees of freedom; ``note`` says why there is no interval."""

    n: int  # rounds paired, or the smaller side's trials
    mean: float
    sem: float  # NaN: no interval
    df: float
    note: str = ""
    paired: bool = True


def paired_logs(cell: dict[int, float], base: dict[int, float]) -> LogRatio:
    """The per-round log ratios' mean, standard error (n - 1 degrees of freedom) and count."""
    # Plain floats, not numpy: a few rounds per cell, 10,000 cells in a big run's `show`.
    rounds = sorted(set(cell) & set(base))
    logs = [math.log(cell[r] / base[r]) for r in rounds if cell[r] > 0 and base[r] > 0]
    n = len(logs)
    mean = math.fsum(logs) / n if n else NAN
    if n < len(rounds):
        return LogRatio(n, mean, NAN, NAN, "a value not above zero: no ratio in that round")
    if n < 2:
        return LogRatio(n, mean, NAN, NAN, "one round" if n else "no round ran both")
    sem = math.sqrt(math.fsum((x - mean) ** 2 for x in logs) / (n - 1) / n)
    if sem <= NO_SPREAD:
        return LogRatio(n, mean, NAN, NAN, f"the same ratio in all {n} rounds: no spread to judge")
    return LogRatio(n, mean, sem, n - 1.0)


def welch_logs(cell: Values, base: Values) -> LogRatio:
    """Unpaired: the difference of the two sides' mean logs (the ratio of geometric means), with Welch's
    standard error and degrees of freedom; for trials that share no rounds (two runs). One pair of
    ``welch_logs_of``."""
    return welch_logs_of([(cell, base)])[0]


def welch_logs_of(pairs: Sequence[tuple[Values, Values]]) -> list[LogRatio]:
    """Welch's log ratio (``welch_logs``) of each (cell, base) of ``pairs``: numpy over all pairs of the same
    lengths at once (two runs' 10,500 cells one at a time were 0.5 s of `compare`)."""
    out: dict[int, LogRatio] = {}
    for index, (cells, bases) in _by_length(pairs):
        out.update(zip(index, _welch(cells, bases), strict=True))
    return [out[i] for i in range(len(pairs))]


def _welch(a: np.ndarray, b: np.ndarray) -> list[LogRatio]:
    """Welch's log ratio of each row of ``a`` with the same row of ``b``: their logs, means and variances along
    the rows, the rest in plain floats."""
    (k, na), nb = a.shape, b.shape[1]
    n = min(na, nb)
    if n == 0:
        return [LogRatio(0, NAN, NAN, NAN, "no trials on one side")] * k
    not_positive = ((a <= 0).any(axis=1) | (b <= 0).any(axis=1)).tolist()
    with np.errstate(divide="ignore", invalid="ignore"):  # rows with a value not above zero are not used
        la, lb = np.log(a), np.log(b)
        means = (la.mean(axis=1) - lb.mean(axis=1)).tolist()
        if n < 2:
            spread = [(NAN, NAN)] * k
        else:
            va, vb = (la.var(axis=1, ddof=1) / na).tolist(), (lb.var(axis=1, ddof=1) / nb).tolist()
            spread = list(zip(va, vb, strict=True))
    out = []
    for bad, mean, (va, vb) in zip(not_positive, means, spread, strict=True):
        if bad:
            out.append(LogRatio(n, NAN, NAN, NAN, "a value not above zero"))
        elif n < 2:
            out.append(LogRatio(n, mean, NAN, NAN, "one trial"))
        elif math.sqrt(va + vb) <= NO_SPREAD:
            out.append(LogRatio(n, mean, NAN, NAN, "no spread on either side to judge"))
        else:
            df = (va + vb) ** 2 / (va * va / (na - 1) + vb * vb / (nb - 1))
            out.append(LogRatio(n, mean, math.sqrt(va + vb), df, paired=False))
    return out


def log_ratio(r: LogRatio, confidence: float = 0.95) -> Ratio:
    """The ratio, its ``confidence`` interval and two-sided p-value from one t statistic: they cannot disagree."""
    return log_ratios(np.array([r.mean]), np.array([r.sem]), np.array([r.df]), confidence)[0]


def log_ratios(mean: np.ndarray, sem: np.ndarray, df: np.ndarray, confidence: float = 0.95) -> list[Ratio]:
    """``log_ratio`` of each comparison given as arrays of its ``LogRatio``'s mean, sem and df: the t
    distribution's ufuncs called once over all of them (once per comparison was 0.4 s of comparing 10,500
    cells), each ratio's exponentials by ``math.exp`` (numpy's may round the last digit otherwise)."""
    with np.errstate(divide="ignore", invalid="ignore"):  # NaN where there is no interval: not used
        half = (special.stdtrit(df, 0.5 + confidence / 2) * sem).tolist()
        p = (2 * special.stdtr(df, -np.abs(mean / sem))).tolist()
    means, sems = np.asarray(mean, dtype=float).tolist(), np.asarray(sem, dtype=float).tolist()
    out = []
    for m, s, h, q in zip(means, sems, half, p, strict=True):
        if m != m:
            out.append(Ratio(NAN, NAN, NAN, NAN))
        elif s != s:
            out.append(Ratio(math.exp(m), NAN, NAN, NAN))
        else:
            out.append(Ratio(math.exp(m), math.exp(m - h), math.exp(m + h), q))
    return out


# Many cells at once: numpy along the rows of one array per count of trials, with the same operations in the
# same order as on one array, so the same numbers (tests/unit/test_stats.py holds them to one cell at a time).
# One cell at a time cost ~0.1 ms of numpy calls each: 1.3 s of `show` on 10,500 cells.

Values = np.ndarray | list[float]


def summaries(groups: Sequence[Values], confidence: float = 0.95, sequential: bool = False) -> list[Summary]:
    """``summarize`` of each of ``groups``."""
    out: dict[int, Summary] = {}
    for index, (rows,) in _by_length([(g,) for g in groups]):
        out.update(zip(index, _summaries(rows, confidence, sequential), strict=True))
    return [out[i] for i in range(len(groups))]


def ratios_of(pairs: Sequence[tuple[Values, Values]], confidence: float = 0.95) -> list[Ratio]:
    """``ratio`` of each (cell, base) of ``pairs``."""
    out: dict[int, Ratio] = {}
    for index, (cells, bases) in _by_length(pairs):
        out.update(zip(index, _ratios(cells, bases, confidence), strict=True))
    return [out[i] for i in range(len(pairs))]


def _by_length(groups: Sequence[tuple[Values, ...]]) -> list[tuple[list[int], tuple[np.ndarray, ...]]]:
    """The groups' positions per combination of lengths, and their values as one 2-D array per member."""
    lengths: dict[tuple[int, ...], list[int]] = {}
    for i, members in enumerate(groups):
        lengths.setdefault(tuple(len(m) for m in members), []).append(i)
    return [
        (
            index,
            tuple(
                np.array([groups[i][j] for i in index], dtype=float).reshape(len(index), n) for j, n in enumerate(ns)
            ),
        )
        for ns, index in lengths.items()
    ]


def _summaries(rows: np.ndarray, confidence: float, sequential: bool) -> list[Summary]:
    k, n = rows.shape
    if n == 0:
        return [Summary(0, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN)] * k
    mean, nan = rows.mean(axis=1), np.full(k, NAN)
    std, low, high, cv = nan, nan, nan, nan
    if n > 1:
        std = rows.std(axis=1, ddof=1)
        quantile = anytime.boundary(n, 1 - confidence) if sequential else t_quantile(confidence, n - 1)
        half = quantile * std / math.sqrt(n)
        low, high = np.where(std > 0, mean - half, mean), np.where(std > 0, mean + half, mean)
        with np.errstate(divide="ignore", invalid="ignore"):
            cv = np.where(mean != 0, std / mean, NAN)
    columns = (mean, std, rows.min(axis=1), rows.max(axis=1), cv, np.median(rows, axis=1), low, high)
    return [Summary(n, *row) for row in zip(*(c.tolist() for c in columns), strict=True)]


def _ratios(a: np.ndarray, b: np.ndarray, confidence: float) -> list[Ratio]:
    k, (na, nb) = len(a), (a.shape[1], b.shape[1])
    none = Ratio(NAN, NAN, NAN, NAN)
    if na == 0 or nb == 0:
        return [none] * k
    ma, mb = a.mean(axis=1), b.mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = ma / mb
        low, high, p = np.full(k, NAN), np.full(k, NAN), np.full(k, NAN)
        if na >= 2 and nb >= 2:
            va, vb = a.var(axis=1, ddof=1) / na, b.var(axis=1, ddof=1) / nb
            low, high = _fieller(ma, mb, va, vb, t_quantile(confidence, min(na, nb) - 1))
            spread = a.std(axis=1) + b.std(axis=1) > 0
            p = np.where(spread, _welch_p(ma, mb, va, vb, (na, nb)), np.where(ma == mb, 1.0, 0.0))
    rows = zip(mb.tolist(), q.tolist(), low.tolist(), high.tolist(), p.tolist(), strict=True)
    return [none if m == 0 else Ratio(*rest) for m, *rest in rows]


def _fieller(ma: np.ndarray, mb: np.ndarray, va: np.ndarray, vb: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
    g = t * t * vb / (mb * mb)
    q = ma / mb
    half = (t / abs(mb)) * np.sqrt(va * (1 - g) + q * q * vb)
    bounded = g < 1  # else the baseline's own interval includes zero: the ratio is unbounded
    return np.where(bounded, (q - half) / (1 - g), NAN), np.where(bounded, (q + half) / (1 - g), NAN)


def t_quantile(confidence: float, df: float) -> float:
    """The two-sided ``confidence`` quantile of Student's t with ``df`` degrees of freedom."""
    return float(special.stdtrit(df, 0.5 + confidence / 2))


def _welch_p(ma: np.ndarray, mb: np.ndarray, va: np.ndarray, vb: np.ndarray, n: tuple[int, int]) -> np.ndarray:
    """Welch's two-sided p-value (scipy.stats.ttest_ind with equal_var=False)."""
    t = (ma - mb) / np.sqrt(va + vb)
    # The square by pow(), as one number's ** 2 takes it: numpy's array square rounds otherwise in 1 of 1,300.
    squared = np.array([v**2 for v in (va + vb).tolist()])
    df = squared / (va * va / (n[0] - 1) + vb * vb / (n[1] - 1))
    return 2 * special.stdtr(df, -abs(t))


def cell_values(frame: pd.DataFrame, metric: str) -> dict[str, np.ndarray]:
    """Per cell, the values of its trials (``per_trial``) in the order of their ids."""
    trials = per_trial(frame, metric)
    return runs_of(trials["cell_id"], trials["value"].to_numpy())


def runs_of(keys: pd.Series, values: np.ndarray) -> dict[str, np.ndarray]:
    """``values`` split where ``keys`` changes: one array per key, for keys whose rows are contiguous (sorted).
    One split, not a pandas group per cell: 10,000 groups took 0.4 s each time."""
    import pandas as pd

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


def summary_frame(
    frame: pd.DataFrame, metrics: list[str], confidence: float = 0.95, sequential: bool = False
) -> pd.DataFrame:
    """``summarize`` per (cell_id, metric, direction) of a ``Store.samples_frame``."""
    import pandas as pd

    rows = []
    for metric in metrics:
        trials = per_trial_by_direction(frame, metric)
        for (cell, direction), group in trials.groupby(["cell_id", "direction"]):
            summary = summarize(group["value"].to_numpy(), confidence, sequential)
            rows.append({"cell_id": cell, "metric": metric, "direction": direction, **asdict(summary)})
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def ratios(frame: pd.DataFrame, metric: str, direction: str, confidence: float = 0.95) -> pd.DataFrame:
    """Each cell's mean over its baseline cell's mean: ``ratio`` (Fieller CI, Welch p) per cell.

    A cell whose baseline has no successful trials gets NaN, not a number.
    """
    import pandas as pd

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
