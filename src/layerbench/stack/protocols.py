"""What the stack builder, the database fleet and the run loop ask of a running engine (stack/engines/).

The protocols live apart from the registry (stack/engines/__init__.py), which imports every engine: the fleet,
which the engines' own modules use, names them without importing the engines back. Beside them, what an
engine's host probe is handed (``HostProbe``), for the same reason: capabilities.py hands it through the registry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from layerbench.proc import Runner
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.models import EngineSpec, Limits, PlacementSpec, StackSpec
from layerbench.spec.profiles import Budget
from layerbench.stack.handle import Handle
from layerbench.stack.target import BuildContext, Mount, Target
from layerbench.workloads.servers import ServerDef


class Engine(Protocol):
    """A running engine, as the stack builder and the database fleet use it."""

    kind: str  # "native", "docker", "podman", "vm", "kubernetes", "swarm", "docker-host": Target.engine, Fleet.engine

    def place(
        self, mount: Mount, stack: StackSpec, data_bytes: int, ctx: BuildContext
    ) -> AbstractContextManager[Target]:
        """The workload's place (its limits applied and read back), with the tools image if it needs one."""
        ...


class ContainerEngine(Engine, Protocol):
    """An engine with images and containers (what a database fleet needs beyond ``place``)."""

    daemon: Any  # stack.dockerd.ApiDaemon: the Docker API client of this engine

    def image(self, binaries: dict[str, str], ctx: BuildContext, files: tuple[str, ...] = ()) -> str: ...

    def container(
        self,
        image: str,
        mount: Mount,
        placement: PlacementSpec,
        limits: Limits,
        data_bytes: int,
        ctx: BuildContext,
        options: dict[str, Any] | None = None,
    ) -> AbstractContextManager[Target]: ...


@runtime_checkable
class StartsServers(Protocol):
    """An engine that starts database servers its own way (a VM's guest, a pod, a swarm service): the fleet
    asks it for a starter (``fleet.Starter``: instance → its ``Endpoint``) instead of running servers here."""

    def server_starter(
        self, definition: ServerDef, exits: ExitStack, ctx: BuildContext
    ) -> Callable[..., AbstractContextManager[Any]]: ...


@runtime_checkable
class BoundedNode(Protocol):
    """An engine whose node has less room than this host (a pod's): the profiles divide what it can have."""

    def budget(self, budget: Budget) -> Budget: ...


@runtime_checkable
class ExecsInTargets(Protocol):
    """An engine whose targets take a long-lived process by exec, its host PID known (a fio server of many
    clients, stack/clients.py): Docker's and Podman's containers, a swarm's tasks, a local node's pods."""

    def start_in(self, target: Target, argv: Sequence[str], log: Path) -> Handle: ...


@runtime_checkable
class SharesPlaces(Protocol):
    """An engine whose many clients can share one place for their data (``clients.shared``) though it makes
    its targets its own way (a pod each on one claim or host directory, a service each on one volume)."""

    def shared_places(
        self, mount: Mount, stack: StackSpec, data_bytes: int, count: int, ctx: BuildContext
    ) -> AbstractContextManager[list[Target]]: ...


@dataclass(frozen=True)
class HostProbe:
    """What an engine's host probe is handed (``EngineType.probe``): this host as probed so far (all but the
    engines), the engines the experiment's cells name (on each of their nodes), and what those make the probe
    learn (spec/engines/row.py's ``Probe``: an engine whose row names one is probed only when it is asked)."""

    runner: Runner
    cache_dir: Path
    host: HostCaps
    engines: tuple[EngineSpec, ...] = ()
    probes: frozenset[str] = frozenset()
    notes: list[str] = field(default_factory=list)  # what a probe noticed that a person should know
