"""What a built stack hands to a workload: where to run, and at what path."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from layerbench.proc import Completed, Runner
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


@dataclass(frozen=True)
class Device:
    path: str  # /dev/loop3, /dev/zram1, /dev/nvme0n1
    kind: str
    size_bytes: int
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Mount:
    device: Device
    fs_type: str  # "none" when there is no filesystem (raw device)
    mountpoint: Path | None
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Facts:
    """What an engine tells the trial about the place it made, typed: read from the keys an engine fills in
    ``Target.info`` (or a database server's ``Endpoint.info``), which a trial records as they are.

    The trial's checks read these instead of branching on an engine's keys: ``accel`` (a guest's: ``tcg``
    makes a trial not comparable), ``limits_enforced`` (read back from the cgroup) or else ``limits_set``
    (what a daemon on another machine says it set: unverified), ``unseen`` (another machine ran it).
    """

    limits: dict[str, Any] | None = None  # the limits asked, as the spec dumps them
    limits_enforced: dict[str, Any] | None = None  # read back from the kernel's cgroup files here
    limits_set: dict[str, Any] | None = None  # a Docker host's: what its daemon says it set
    accel: str | None = None  # a guest's accelerator: kvm, or tcg (an emulated CPU)
    guest_kernel: str | None = None  # a guest's kernel release
    unseen: str | None = None  # the machine, not this host, that ran it (its monitor sees nothing of it)
    pid: int | None = None  # the process whose mount table the checks read (None: this one's)
    container: str | None = None  # the container's id (short)
    unit: str | None = None  # a guest's database server: its systemd unit
    placement: str | None = None  # the placement's kind, where the engine records it (tmpfs: no device)
    cgroup: dict[str, str] = field(default_factory=dict)  # controller → the cgroup directory, for the monitor
    told: frozenset[str] = frozenset()  # the facts the engine gave (a fact it gave as None among them)

    @classmethod
    def of(cls, info: dict[str, Any]) -> Facts:
        known = {f.name for f in fields(cls)} - {"told"}
        given = {k: v for k, v in info.items() if k in known}
        return cls(**given, told=frozenset(given))

    def recorded(self, names: tuple[str, ...]) -> dict[str, Any]:
        """The named facts the engine gave, to record beside a trial."""
        return {name: getattr(self, name) for name in names if name in self.told}


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
