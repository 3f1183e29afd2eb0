"""What a built stack hands to a workload: where to run, and at what path."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from layerbench.proc import Completed, Runner
from layerbench.records.checks import Check
from layerbench.records.facts import Facts
from layerbench.records.info import ClusterInfo
from layerbench.spec.profiles import Budget
from layerbench.stack.ledger import Ledger
from layerbench.stack.shared import Shared

# Where `make setup` puts what the database clients need (the YCSB jars, IOzone); --cache-dir elsewhere.
DEFAULT_CACHE = Path("/var/cache/layerbench")

Exec = Callable[[Sequence[str], float], Completed]
Put = Callable[[str, str], str]  # (file name, text) -> its path as the workload sees it


@dataclass(frozen=True)
class BuildContext:
    """Everything a layer needs to build itself; passed down, never global."""

    work_dir: Path  # private (0700) directory for this run's files
    ledger: Ledger
    run_id: str
    runner: Runner
    budget: Budget | None = None  # what resource profiles divide (stacks with database servers)
    cache_dir: Path = DEFAULT_CACHE  # where set-up put the YCSB jars and IOzone
    # Gets each monitor point (series, value, unit) as a trial's monitor takes it (`run --metrics-port`).
    on_monitor: Callable[[str, float, str], None] | None = None
    # The run's database password, made for this run and kept in memory only (never in the store, the
    # ledger or a log): every server the run starts requires it, every client is given it in a 0600 file.
    password: str = field(default_factory=lambda: secrets.token_urlsafe(24), repr=False)
    shared: Shared = field(default_factory=Shared, repr=False)  # what held stacks share: lower layers, images
    # The fsids of Ceph clusters the user runs that may take a fault (`run --allow-faults-on`): checked again
    # against the cluster's own answer before one of its OSDs is held down.
    faults_on: frozenset[str] = frozenset()


class TrialStates(Protocol):
    """A device whose cell names a state for each trial (a Ceph cluster with an OSD down: stack/remote/ceph/
    state.py): ``enter`` puts it there before the trial's run, ``sample`` reads it during the run, ``leave`` reads
    what the trial left and brings it back to normal, answering what to record and the checks on it. Each
    raises where it cannot."""

    def enter(self) -> None: ...

    def sample(self) -> list[tuple[str, float, str]]: ...  # while the trial runs: (series, value, unit)

    def leave(self) -> tuple[ClusterInfo, list[Check]]: ...


@dataclass(frozen=True)
class Device:
    path: str  # /dev/loop3, /dev/zram1, /dev/nvme0n1
    kind: str
    size_bytes: int
    info: dict[str, Any] = field(default_factory=dict)
    states: TrialStates | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Mount:
    device: Device
    fs_type: str  # "none" when there is no filesystem (raw device)
    mountpoint: Path | None
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Target:
    """A place a workload can run.

    ``run(argv, timeout)`` executes a command there (natively or inside the
    container); ``put(name, text)`` places a small file (a job file) where that
    command can read it; ``path`` is the file, directory or device the workload
    should use, as seen from inside; ``device`` is the block device underneath,
    for accounting; ``engine`` is the engine's kind ("native", "docker", "podman", "vm").
    """

    run: Exec
    put: Put
    path: str
    path_is_device: bool
    device: Device
    engine: str
    info: dict[str, Any] = field(default_factory=dict)
    # The mount table the workload sees where it is no process of this host's (a guest's); else None,
    # and the checks read /proc/<pid>/mountinfo of ``info["pid"]`` (a container's) or of this process.
    mount_table: Callable[[], str] | None = None

    @property
    def facts(self) -> Facts:
        return Facts.of(self.info)
