"""A progress bar with ETA over trials, fed by the run loop's on_trial callback."""

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

from layerbench.records.trial import TrialRecord
from layerbench.run.schedule import Trial

# A Java stack trace's frames ("\tat org.x.Y.z(Y.java:1)", "... 10 more") say where, not what.
_FRAME = re.compile(r"^\s+(at |\.\.\. \d+ more)")


def error_line(stderr: str) -> str:
    """The line that says what went wrong: the last one that is not a stack frame."""
    lines = [line for line in (stderr or "").strip().splitlines() if line.strip() and not _FRAME.match(line)]
    return lines[-1].strip() if lines else ""


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{secs:02d}"


class TrialProgress:
    """A live bar on a terminal; elsewhere (CI, `make run | tee`, a pipe) a line per finished trial,
    because a bar that redraws in place prints nothing there until the run ends."""

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
            disable=not console.is_terminal,
        )
        self._task = self._progress.add_task("trials", total=total)
        self._console = console

    def __enter__(self) -> TrialProgress:
        self._progress.start()
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self._progress.stop()

    def decisions(self, line: str, round_trials: int) -> None:
        """A budget run's new round: its trials join the bar's total, and what was decided is said once."""
        task = self._progress.tasks[0]
        self._progress.update(self._task, total=max(task.total or 0, task.completed + round_trials))
        self._console.print(f"[dim]{line}[/]")

    def advance(self, trial: Trial, record: TrialRecord) -> None:
        if record.status != "ok":
            self._console.print(
                f"[red]failed[/] {trial.cell.label()} #{trial.repetition}: {record.category}: "
                f"{error_line(record.stderr)[:200]}"
            )
        self._progress.update(self._task, advance=1, description=trial.cell.label())
        if not self._console.is_terminal:
            self._console.print(self._line(trial, record), markup=False, highlight=False)

    def _line(self, trial: Trial, record: TrialRecord) -> str:
        task = self._progress.tasks[0]
        return (
            f"[{task.completed:.0f}/{task.total:.0f}] {trial.cell.label()} #{trial.repetition} {record.status}"
            f" ({record.ended_at - record.started_at:.1f} s{_again(record)}), elapsed {_clock(task.elapsed)}"
            f", eta {_clock(task.time_remaining)}"
        )


def _again(record: TrialRecord) -> str:
    """How often the trial was measured again because the host was busy beside it (run/loop.py's _undisturbed)."""
    n = len(record.info.disturbed or ())
    return f"; measured again {n}×: the host was busy" if n else ""
