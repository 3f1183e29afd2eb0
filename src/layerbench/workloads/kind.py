"""The workload seam: what generic code asks of a workload type (``WorkloadType``).

Each workload type declares one ``WorkloadType`` in its own module here
(``fio_kind.WORKLOAD``, ``iozone.WORKLOAD``, ``ycsb.WORKLOAD``,
``pgbench.WORKLOAD``) and is registered once, by its spec kind, in
``registry.WORKLOADS``. Its spec-level answers (pairing, feasibility, sweeps)
are on its model (``spec/workload_spec.py``), which the spec layer reads
without importing this package. Nothing outside ``workloads/`` tests a
workload's class: it asks the registry.

A file workload's command is built for a place that only has to look like a
``stack.target.Target`` (``Place``): this package sits below ``stack/``, which
imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from layerbench.spec.models import StackSpec


class Place(Protocol):
    """Where a file workload runs, as its command line needs it (``stack.target.Target`` is one)."""

    @property
    def path(self) -> str: ...

    @property
    def path_is_device(self) -> bool: ...

    def put(self, name: str, text: str) -> str: ...


@dataclass(frozen=True)
class QuietOutput:
    """A tool whose report goes to a file at the target, read once it is done (IOzone's table: printed as it
    went through ``docker exec``, it woke the daemons into its shortest tests)."""

    file: Callable[[str], str]  # the placement's path → the report file there
    argv: Callable[[list[str], str], list[str]]  # the command → the same, writing its report to the file
    read_argv: Callable[[str], list[str]]  # the report file → the command that prints it


def _never(w: Any) -> bool:
    return False


def _none(w: Any) -> None:
    return None


@dataclass(frozen=True)
class WorkloadType:
    """One workload type: how it runs and how its results are read, for the generic code above."""

    kind: str  # its spec name (``kind: fio``)
    # The processes a CPU profile's preemption count follows: the tool, or a database's client.
    comms: tuple[str, ...]
    # The metric its cells are compared on (analysis/comparisons.py): ops/s, IOPS, bandwidth...
    headline: Callable[[Any], str]
    # Room the stack's files need for it (a tmpfs is sized by it); a database stack sizes its own: 0.
    data_bytes: Callable[[Any], int] = lambda w: 0
    # The files it keeps on the filesystem under test: a name shared by workloads sharing it → bytes.
    files: Callable[[Any], dict[str, int]] = lambda w: {}
    # Why it cannot run on a stack, where only its tool can tell (fio reading a user's job file).
    reads: Callable[[StackSpec, Any], str | None] = lambda stack, w: None
    # What its parser raises on output it cannot read: the trial is then a parse-error, with the tool's words.
    parse_errors: tuple[type[Exception], ...] = ()
    # Its results are a surface of points per operation (IOzone): each operation is judged apart, and the
    # ratio table folds its points rather than its headline.
    surface: bool = False
    # Whether what it measures writes (advice), given its name's operation ("iozone randwrite" → "randwrite");
    # None where it cannot tell (a job file): advice reads the name.
    writes: Callable[[Any, str], bool | None] = lambda w, operation: None
    # The direction of a one-I/O-at-a-time load (queue depth 1, one job), which a remote device's added
    # latency is read from; None for any other load.
    qd1_direction: Callable[[Any], str | None] = _none
    # fio's latency log: whether layerbench asks for it on the command line, and its interval in ms.
    lat_log: Callable[[Any], bool] = _never
    lat_log_ms: Callable[[Any], int | None] = _none
    # A file workload's command at a place, with the tools' cache and fio's latency log prefix (None: none).
    argv: Callable[[Any, Place, Path, str | None], list[str]] | None = None
    # Whether each stack prepares its test file first (fio's fill); the run reads the workload's fields.
    needs_precondition: Callable[[Any], bool] = _never
    # Asks for io_uring through fields layerbench turns into a command (probed at the target first).
    uses_io_uring: Callable[[Any], bool] = _never
    # The seconds at the start the tool leaves out of its results (fio's ramp), so the device's are too.
    ramp_s: Callable[[Any], float] = lambda w: 0.0
    # The longest a trial may take, given the slack a trial allows beyond the tool's own time.
    time_limit_s: Callable[[Any, float], float] = lambda w, slack: slack
    quiet: QuietOutput | None = None
    # A workload that checks what it wrote: the command reading its trial's data back (given the trial's own
    # command), run after the trial (run/states.py); None where it checks nothing (fio without verify).
    read_back_argv: Callable[[Any, list[str]], list[str] | None] = lambda w, argv: None
