"""A progress bar with ETA over trials, fed by the pipeline's on_trial callback."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from layerbench.schedule import Trial
from layerbench.store.db import TrialRecord


class TrialProgress:
    def __init__(self, console: Console, total: int) -> None:
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("elapsed"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
        )
        self._task = self._progress.add_task("trials", total=total)
        self._console = console

    def __enter__(self) -> TrialProgress:
        self._progress.start()
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self._progress.stop()

    def advance(self, trial: Trial, record: TrialRecord) -> None:
        if record.status != "ok":
            tail = (record.stderr or "").strip().splitlines()[-1:] or [""]
            self._console.print(
                f"[red]failed[/] {trial.cell.label()} #{trial.repetition}: {record.category}: {tail[0][:200]}"
            )
        self._progress.update(self._task, advance=1, description=trial.cell.label())
