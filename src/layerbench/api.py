"""A small Python API for notebooks and scripts: ``layerbench.open(db).samples()``."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from layerbench.analysis import precision
from layerbench.analysis.overhead import CellResult
from layerbench.analysis.overhead import of_run as results_of_run
from layerbench.analysis.scaling import Scaling
from layerbench.analysis.scaling import of_run as scaling_of_run
from layerbench.analysis.stats import ratios, summary_frame
from layerbench.report.export import samples_with_config
from layerbench.store.db import RunRow, Store


class Results:
    def __init__(self, store: Store) -> None:
        self.store = store

    def runs(self) -> list[RunRow]:
        return self.store.runs()

    def samples(self, run: str = "latest") -> pd.DataFrame:
        """One row per sample of every successful trial, with the cell's configuration as columns."""
        run_id = self.store.resolve_run(run)
        return samples_with_config(self.store.samples_frame(run_id), self.store.cells(run_id))

    def summary(self, run: str = "latest", metrics: tuple[str, ...] = ("iops", "bw")) -> pd.DataFrame:
        """Per cell, metric and direction: n, mean, std, min, max, CV, median and the 95% CI."""
        run_id = self.store.resolve_run(run)
        return summary_frame(self.store.samples_frame(run_id), list(metrics), self._confidence(run_id))

    def ratios(self, run: str = "latest", metric: str = "iops", direction: str = "read") -> pd.DataFrame:
        """Per cell: mean over its baseline's mean, Fieller's 95% CI and Welch's p-value."""
        run_id = self.store.resolve_run(run)
        return ratios(self.store.samples_frame(run_id), metric, direction, self._confidence(run_id))

    def _confidence(self, run_id: str) -> float:
        """95%, or wider where a precision target stopped cells early (analysis/precision.py)."""
        return precision.of_spec(self.store.run(run_id).spec_json)

    def results(self, run: str = "latest") -> list[CellResult]:
        return results_of_run(self.store, self.store.resolve_run(run))

    def scaling(self, run: str = "latest") -> list[Scaling]:
        """Per group of database cells that differ only in instance count: the curve, its peak, and the
        resource that saturated first (``.verdict()`` says it in a sentence)."""
        return scaling_of_run(self.store, self.store.resolve_run(run))

    def close(self) -> None:
        self.store.close()


def open(db: str | Path = "layerbench.db") -> Results:
    return Results(Store.open(Path(db), create=False))
