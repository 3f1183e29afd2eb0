"""What Docker and Podman share: an engine reached through Docker's API.

Both hand the same ``ApiDaemon`` (a client of a private daemon's socket) to
the placement, image and network layers; an engine's own container options
(Podman's cgroup parent) ride along with every container it creates.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import docker

from layerbench.errors import PrerequisiteError
from layerbench.proc import Runner
from layerbench.spec.models import Limits, PlacementSpec, StackSpec
from layerbench.stack import handle, network
from layerbench.stack.dockerd import ApiDaemon
from layerbench.stack.image import ensure_image, resolve
from layerbench.stack.ledger import Resource
from layerbench.stack.placement import Role, _volume, container_placement, host_dir, tuning_options
from layerbench.stack.target import BuildContext, Mount, Target
from layerbench.workloads import iozone

# sh and cat: IOzone's output goes to a file, read once it is done (workloads/iozone.py's quiet_argv).
# env and rm: fio's own engine for a remote export takes its environment from env (workloads/fio.py's
# over_export), and its latency logs beside the job files are removed once read.
IMAGE_BINARIES = ["fio", "sleep", "truncate", "sh", "cat", "env", "rm"]


@dataclass
class ApiEngine:
    daemon: ApiDaemon
    options: dict[str, Any] = field(default_factory=dict)  # every container's, beside the placement's own
    tools_image: str | None = None  # imported the first time a stack needs it

    @property
    def kind(self) -> str:
        return self.daemon.kind

    @property
    def docker(self) -> ApiDaemon:
        """The daemon, under the name the stack builder's engine layer had before the seam."""
        return self.daemon

    def place(
        self, mount: Mount, stack: StackSpec, data_bytes: int, ctx: BuildContext
    ) -> AbstractContextManager[Target]:
        if self.tools_image is None:
            self.tools_image = self.image(tools(ctx), ctx)
        options = tuning_options(stack.tuning)
        return self.container(self.tools_image, mount, stack.placement, stack.limits, data_bytes, ctx, options)

    def image(self, binaries: dict[str, str], ctx: BuildContext, files: tuple[str, ...] = ()) -> str:
        return ensure_image(self.daemon, binaries, ctx, files)

    def container(
        self,
        image: str,
        mount: Mount,
        placement: PlacementSpec,
        limits: Limits,
        data_bytes: int,
        ctx: BuildContext,
        options: dict[str, Any] | None = None,
        role: Role | None = None,
    ) -> AbstractContextManager[Target]:
        merged = {**self.options, **(options or {})}
        return container_placement(self.daemon, image, mount, placement, limits, data_bytes, ctx, merged, role)

    @contextmanager
    def shared_places(
        self, mount: Mount, stack: StackSpec, data_bytes: int, count: int, ctx: BuildContext
    ) -> Iterator[list[Target]]:
        """``count`` containers on one volume (or bind directory), given to each as an option: a container
        that otherwise has nothing mounted at /data (a writable-layer placement)."""
        if self.tools_image is None:
            self.tools_image = self.image(tools(ctx), ctx)
        with contextlib.ExitStack() as exits:
            options = _shared_data(stack.placement, mount, self.daemon, exits, ctx)
            layer = PlacementSpec(kind="writable-layer")
            made = partial(self.container, self.tools_image, mount, layer, stack.limits, data_bytes, ctx, options)
            yield [exits.enter_context(made()) for _ in range(count)]

    def start_in(self, target: Target, argv: Sequence[str], log: Path) -> handle.Handle:
        return handle.start_exec(self.daemon.client.api, str(target.info["container"]), argv, log, None)


def _shared_data(
    spec: PlacementSpec, mount: Mount, daemon: ApiDaemon, exits: contextlib.ExitStack, ctx: BuildContext
) -> dict[str, Any]:
    """The one volume (or bind directory) every client's container mounts at /data, as container options."""
    if spec.kind == "volume":
        name = exits.enter_context(_volume(daemon, ctx))
        return {"volumes": {name: {"bind": "/data", "mode": "rw"}}}
    if spec.kind == "bind" and mount.mountpoint is not None:
        host = exits.enter_context(host_dir(mount.mountpoint / f"lb-bind-shared-{uuid.uuid4().hex[:6]}", ctx))
        return {"volumes": {str(host): {"bind": "/data", "mode": "rw"}}}
    raise PrerequisiteError(f"clients.shared: placement {spec.kind} cannot be shared")


def tools(ctx: BuildContext) -> dict[str, str]:
    """fio and its helpers; IOzone too when set-up fetched it (an image with one more small binary)."""
    found = resolve(IMAGE_BINARIES)
    if iozone.missing(ctx.cache_dir) is None:
        found["iozone"] = str(iozone.binary(ctx.cache_dir))
    return found


# What a dead run left on a private daemon through Docker's API, removed from its ledger rows (`cleanup`):
# nothing is left to remove where the daemon died with its containers.
def reclaim_container(res: Resource, runner: Runner) -> None:
    with _client(res) as client:
        if client is not None:
            with contextlib.suppress(docker.errors.NotFound):
                client.containers.get(res.detail.get("container", res.ident)).remove(force=True, v=True)


def reclaim_volume(res: Resource, runner: Runner) -> None:
    with _client(res) as client:
        if client is not None:
            with contextlib.suppress(docker.errors.NotFound):
                client.volumes.get(res.ident).remove(force=True)


@contextlib.contextmanager
def _client(res: Resource):  # -> Iterator[DockerClient | None]
    """The dead run's daemon, if it still answers; if not, its containers died with it."""
    socket = Path(res.detail.get("socket", ""))
    if not socket.is_socket():
        yield None
        return
    try:
        # Constructing asks the daemon for its API version: a stale socket fails here, a live daemon answered.
        client = docker.DockerClient(base_url=f"unix://{socket}", timeout=30)
    except docker.errors.DockerException:
        yield None
        return
    try:
        yield client
    finally:
        client.close()


def reclaim_network(res: Resource, runner: Runner) -> None:
    with _client(res) as client:
        if client is not None:
            with contextlib.suppress(docker.errors.NotFound):
                client.networks.get(res.ident).remove()
    network.delete_link(res.detail.get("bridge", ""), runner)


REMOVERS = {"container": reclaim_container, "volume": reclaim_volume, "network": reclaim_network}
