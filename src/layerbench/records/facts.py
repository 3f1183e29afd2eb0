"""What an engine told of the place it made (a workload's target, a database server's), typed.

An engine fills a dict as it makes the place (``Target.info``, ``Endpoint.info``); the trial reads it
through ``Facts`` and records it (a file trial's ``target``, each server's and each fio client's entry), so
the same type serves the trial's checks, the store and the analysis. Here, below both the stack and the store.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from layerbench.records.codec import JsonObject


@dataclass(frozen=True)
class Facts:
    """The facts an engine gave, each typed; the keys of its own that no reader names stay in ``extra``.

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
    pod: str | None = None  # a Kubernetes pod's name
    service: str | None = None  # a Swarm service's name
    node: str | None = None  # the cluster's node that runs it
    daemon_url: str | None = None  # a Docker host's daemon
    shared: bool | None = None  # a fio client's: one place for every client
    claim: dict[str, Any] | None = None  # a Kubernetes claim: its volume, source, capacity, provisioner
    data_mount: dict[str, Any] | None = None  # what the pod's /data is, from its own mount table
    io_uring: str | None = None  # "allowed" or "refused: why", once a trial asked (run/kinds/single.py)
    told: frozenset[str] = frozenset()  # the facts the engine gave (a fact it gave as None among them)
    extra: Mapping[str, Any] = field(default_factory=dict)  # the engine's keys no reader names, as given

    @classmethod
    def of(cls, info: Mapping[str, Any]) -> Facts:
        known = {f.name for f in fields(cls)} - {"told", "extra"}
        given = {k: v for k, v in info.items() if k in known}
        return cls(**given, told=frozenset(given), extra={k: v for k, v in info.items() if k not in known})

    from_json = of

    def to_json(self) -> JsonObject:
        """The dict the engine gave, key for key (a fact given as None stays None)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name in self.told} | dict(self.extra)

    def recorded(self, names: tuple[str, ...]) -> dict[str, Any]:
        """The named facts the engine gave, to record beside a trial."""
        return {name: getattr(self, name) for name in names if name in self.told}
