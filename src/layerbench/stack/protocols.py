"""What the stack builder, the database fleet and the pipeline ask of a running engine (stack/engines/).

The protocols live apart from the registry (stack/engines/__init__.py), which imports every engine: the fleet,
which the engines' own modules use, names them without importing the engines back.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol

from layerbench.spec.models import Limits, PlacementSpec, StackSpec
from layerbench.stack.target import BuildContext, Mount, Target


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

    daemon: Any  # stack.dockerd.DockerEngine: the Docker API client of this engine

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
