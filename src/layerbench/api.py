"""The public API, for programs, notebooks and the CLI alike.

Start or resume a run (``start_run``, ``resume_run``: a ``Run`` handle whose ``execute`` tells of each trial
as it is saved), and read results (``layerbench.open(db).samples()``): every reading method loads the run
into the read model (store/read.py) and answers from it, as the CLI and the reports do. What reads a run
(pandas, the analysis) is imported by the methods that read one, so a program that only runs pays for none.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from layerbench.run import decide as run_decide
from layerbench.run.start import Events, Places, Run, preflight, resume, start
from layerbench.spec import load as spec_load
from layerbench.spec.matrix import Matrix
from layerbench.spec.models import Experiment
from layerbench.stack.target import DEFAULT_CACHE
from layerbench.store.db import RunRow, Store
from layerbench.store.open import open_store

if TYPE_CHECKING:
    import pandas as pd

    from layerbench.analysis.overhead import CellResult
    from layerbench.analysis.scaling import Scaling
    from layerbench.store.read import RunData

__all__ = ["Events", "Places", "Results", "Run", "open", "resume_run", "start_run"]

WORK_DIR = Path("/var/tmp/layerbench")
STATE_DIR = Path("/var/lib/layerbench")
CACHE_DIR = DEFAULT_CACHE  # where `make setup` builds the tools' caches


def start_run(
    spec: str | Experiment,
    db: str | Path | Store = "layerbench.db",
    places: Places = Places(WORK_DIR, STATE_DIR, CACHE_DIR),
    seed: int = 0,
    format_devices: Sequence[str] = (),
    matrix: Matrix | None = None,
    node: str | None = None,
    faults_on: Sequence[str] = (),
) -> Run:
    """Record a new run of ``spec`` (a preset's name, a YAML file, or an ``Experiment``) and return it, ready to
    ``execute``. ``matrix``: the cells already expanded on this host (the CLI shows them first); by default
    they are expanded here. A block device is formatted only if it is in ``format_devices``; a Ceph cluster the
    user runs takes a fault only if its fsid is in ``faults_on``."""
    from layerbench.run.session import cells_here

    exp = spec if isinstance(spec, Experiment) else spec_load.load(spec)
    cells = matrix if matrix is not None else cells_here(exp, places.cache_dir, faults_on)
    preflight(exp, cells, places, format_devices)  # before the database is made: a refused run leaves none
    store = db if isinstance(db, Store) else open_store(db)
    run = start(exp, cells, store, places, seed, node, format_devices, faults_on)
    run.decide = _decider(run, store)
    return run


def resume_run(
    run: str = "latest",
    db: str | Path | Store = "layerbench.db",
    places: Places = Places(WORK_DIR, STATE_DIR, CACHE_DIR),
    format_devices: Sequence[str] = (),
    faults_on: Sequence[str] = (),
) -> Run:
    """The run ``run`` (an id, a unique prefix, or 'latest') to continue where it stopped: its finished trials
    are kept and not repeated. Refused where this host changed since or builds other cells now."""
    store = db if isinstance(db, Store) else open_store(db, create=False, writes=True)
    handle = resume(store, run, places, format_devices, faults_on)
    handle.decide = _decider(handle, store)
    return handle


def _decider(run: Run, store: Store) -> run_decide.Decide:
    """With a budget, each round runs the cells of the comparisons still undecided (analysis/decisions.py), and
    the handle's ``status`` says how many are decided and what the rest would take; with a precision target,
    only the cells whose interval is still too wide."""
    if run.exp.trials.budget is not None:

        def still_undecided(cells: list) -> list:
            from layerbench.analysis import decisions  # pandas: only where a rule reads results back
            from layerbench.store.read import load

            chosen, run.status = decisions.status_of(cells, load(store, run.run_id), run.exp.trials)
            return chosen

        return still_undecided
    if run.exp.trials.precision is None:
        return run_decide.every_cell

    def still_open(cells: list) -> list:
        from layerbench.analysis.stopping import still_imprecise  # pandas: only where a target reads samples

        return still_imprecise(run.exp, cells, store.samples_frame(run.run_id))

    return still_open


class Results:
    def __init__(self, store: Store) -> None:
        self.store = store

    def runs(self) -> list[RunRow]:
        return self.store.runs()

    def load(self, run: str = "latest", latency: bool = False) -> RunData:
        """The run as typed objects: its cells (with their sweep points), trials, checks, samples and monitor
        series; ``latency`` also parses fio's completion-latency histograms."""
        from layerbench.store.read import load

        return load(self.store, run, latency)

    def samples(self, run: str = "latest") -> pd.DataFrame:
        """One row per sample of every successful trial, with the cell's configuration as columns."""
        from layerbench.report.export import samples_with_config
        from layerbench.store.read import samples as read_samples

        cells, frame = read_samples(self.store, run)
        return samples_with_config(frame, cells)

    def summary(self, run: str = "latest", metrics: tuple[str, ...] = ("iops", "bw")) -> pd.DataFrame:
        """Per cell, metric and direction: n, mean, std, min, max, CV, median and the 95% CI
        (wider where a precision target stopped cells early: analysis/precision.py)."""
        from layerbench.analysis import precision
        from layerbench.analysis.stats import summary_frame

        data = self.load(run)
        level = precision.confidence(data.trials_rule)
        return summary_frame(data.samples, list(metrics), level, data.trials_rule.sequential)

    def ratios(self, run: str = "latest", metric: str = "iops", direction: str = "read") -> pd.DataFrame:
        """Per cell: mean over its baseline's mean, Fieller's 95% CI and Welch's p-value."""
        from layerbench.analysis import precision
        from layerbench.analysis.stats import ratios

        data = self.load(run)
        return ratios(data.samples, metric, direction, precision.confidence(data.trials_rule))

    def results(self, run: str = "latest") -> list[CellResult]:
        from layerbench.analysis import overhead

        return overhead.of_run(self.load(run))

    def scaling(self, run: str = "latest") -> list[Scaling]:
        """Per group of database cells that differ only in instance count: the curve, its peak, and the
        resource that saturated first (``.verdict()`` says it in a sentence)."""
        from layerbench.analysis import scaling

        return scaling.of_run(self.load(run))

    def close(self) -> None:
        self.store.close()


def open(db: str | Path = "layerbench.db") -> Results:
    return Results(open_store(db, create=False))
