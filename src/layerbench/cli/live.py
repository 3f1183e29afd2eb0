"""`run --metrics-port`: the run's live metrics, served while its trials run (report/metrics.py serves them)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from layerbench.cli.boundary import err_console
from layerbench.records.trial import TrialRecord
from layerbench.report import metrics

if TYPE_CHECKING:  # the run stage imports the stack: the CLI loads it only for a command that runs trials
    from layerbench.run.loop import OnTrial
    from layerbench.run.schedule import Trial


@dataclass(frozen=True)
class Serve:
    """Where the live metrics are served (--metrics-address, --metrics-port)."""

    address: str
    port: int


@contextlib.contextmanager
def live(serve: Serve | None, run_id: str, total: int) -> Iterator[metrics.LiveState | None]:
    """The run's live state, served while the block runs, or None without --metrics-port."""
    if serve is None:
        yield None
        return
    state = metrics.LiveState(run_id, total)
    with metrics.serving(serve.address, serve.port, state) as url:
        err_console.print(f"metrics at {url}", markup=False, highlight=False, soft_wrap=True)
        yield state


def both(progress: OnTrial, state: metrics.LiveState) -> OnTrial:
    """The progress bar's on_trial, then the live state's."""

    def on_trial(trial: Trial, record: TrialRecord) -> None:
        progress(trial, record)
        state.trial_ended(trial.cell, trial.repetition, record)

    return on_trial
