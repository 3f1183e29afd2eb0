"""A small Python API for notebooks and scripts: ``layerbench.open(db).samples()``.

Every method loads the run into the read model (store/read.py) and answers
from it, as the CLI and the reports do.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from layerbench.analysis import overhead, precision, scaling
from layerbench.analysis.overhead import CellResult
from layerbench.analysis.scaling import Scaling
from layerbench.analysis.stats import ratios, summary_frame
from layerbench.report.export import samples_with_config
from layerbench.store.db import RunRow, Store
from layerbench.store.read import RunData, load
from layerbench.store.read import samples as read_samples


class Results:
    def __init__(self, store: Store) -> None:
        self.store = store

    def runs(self) -> list[RunRow]:
        return self.store.runs()

    def load(self, run: str = "latest", latency: bool = False) -> RunData:
        """The run as typed objects: its cells (with their sweep points), trials, checks, samples and monitor
        series; ``latency`` also parses fio's completion-latency histograms."""
        return load(self.store, run, latency)

    def samples(self, run: str = "latest") -> pd.DataFrame:
        """One row per sample of every successful trial, with the cell's configuration as columns."""
        cells, frame = read_samples(self.store, run)
        return samples_with_config(frame, cells)

    def summary(self, run: str = "latest", metrics: tuple[str, ...] = ("iops", "bw")) -> pd.DataFrame:
        """Per cell, metric and direction: n, mean, std, min, max, CV, median and the 95% CI
        (wider where a precision target stopped cells early: analysis/precision.py)."""
        data = self.load(run)
        return summary_frame(data.samples, list(metrics), precision.confidence(data.trials_rule))

    def ratios(self, run: str = "latest", metric: str = "iops", direction: str = "read") -> pd.DataFrame:
        """Per cell: mean over its baseline's mean, Fieller's 95% CI and Welch's p-value."""
        data = self.load(run)
        return ratios(data.samples, metric, direction, precision.confidence(data.trials_rule))

    def results(self, run: str = "latest") -> list[CellResult]:
        return overhead.of_run(self.load(run))

    def scaling(self, run: str = "latest") -> list[Scaling]:
        """Per group of database cells that differ only in instance count: the curve, its peak, and the
        resource that saturated first (``.verdict()`` says it in a sentence)."""
        return scaling.of_run(self.load(run))

    def close(self) -> None:
        self.store.close()


def open(db: str | Path = "layerbench.db") -> Results:
    return Results(Store.open(Path(db), create=False))
