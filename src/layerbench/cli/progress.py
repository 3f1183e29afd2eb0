"""A progress bar with ETA over trials, fed by the pipeline's on_trial callback."""

from __future__ import annotations

import re
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

# A Java stack trace's frames ("\tat org.x.Y.z(Y.java:1)", "... 10 more") say where, not what.
_FRAME = re.compile(r"^\s+(at |\.\.\. \d+ more)")


def error_line(stderr: str) -> str:
    """The line that says what went wrong: the last one that is not a stack frame."""
    lines = [line for line in (stderr or "").strip().splitlines() if line.strip() and not _FRAME.match(line)]
    return lines[-1].strip() if lines else ""


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
            self._console.print(
                f"[red]failed[/] {trial.cell.label()} #{trial.repetition}: {record.category}: "
                f"{error_line(record.stderr)[:200]}"
            )
        self._progress.update(self._task, advance=1, description=trial.cell.label())
