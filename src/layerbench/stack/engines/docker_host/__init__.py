"""The docker-host engine: the workload in a container on a Docker daemon named by URL, which the user runs.

``engine: {kind: docker-host, node: tcp://10.0.0.5:2375}`` (or ``unix:///PATH/docker.sock``; ``ssh://``
where the Docker SDK reaches it). layerbench builds no device nor filesystem for it: the storage is the
daemon's own, on its machine, and each trial records what it is (stack/host_api.py's ``facts``: the
storage driver, the filesystem beneath it, the data-root, the kernel) and what /data is in the
container's own mount table. Placements (spec/rules.py):

- writable-layer: nothing mounted; /data is the image's directory, in the daemon's storage driver;
- volume: a named volume of the daemon's local driver (under its data-root: that filesystem);
- tmpfs: memory (a control, as on Docker).

The tools image is loaded into the daemon from a docker-archive unless it has it (stack/docker_api.py's
``image_on``), and every command of a trial is an exec into the container (stack/placement.py's
``exec_in``); one that times out is killed from inside the container, since the daemon's PIDs may be
another machine's. Limits (cpus, memory, cpuset) are the container's, read back from the daemon's
account of it (``limits_set``): its kernel's cgroup may be on another machine, so they are not verified.

A stack with many clients (stack/clients.py) needs each container's first process on this host, whose root
reaches its fio server's socket: the rules allow only a daemon's unix:// socket, and each container's PID
as the daemon gives it counts only where this host's /proc has it in a cgroup that names the container.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import docker
from docker.models.containers import Container

from layerbench.errors import LayerbenchError, PrerequisiteError
from layerbench.spec.models import EngineSpec, Limits, StackSpec
from layerbench.stack import docker_api, handle, mountinfo
from layerbench.stack.cgroups import parse_proc_cgroup
from layerbench.stack.dockerd import ApiDaemon
from layerbench.stack.engines.container import tools
from layerbench.stack.engines.docker_host import host_api
from layerbench.stack.image import binary_digests
from layerbench.stack.placement import (
    DATA,
    IDLE,
    TMPFS_HEADROOM,
    exec_in,
    kill_inside,
    limit_kwargs,
    put_in,
    tuning_options,
)
from layerbench.stack.target import BuildContext, Exec, Mount, Target

KIND = "docker-host"
EXEC_FAILED_RC = 125  # what placement.exec_in answers when the container or its daemon is gone
MOUNT_TABLE_S = 60.0
PROC = Path("/proc")


@dataclass
class Daemon:
    """The daemon as placement.exec_in uses a ApiDaemon: its client, and a kind for messages."""

    client: docker.DockerClient
    kind: str = KIND


@dataclass
class DockerHostEngine:
    url: str
    daemon: docker.DockerClient
    facts: dict[str, Any]  # the daemon's account of itself (host_api.facts), recorded in every trial
    exits: contextlib.ExitStack  # what lives as long as the engine: the tools image on the daemon
    labels: dict[str, str]  # what its containers and volumes carry (docker_api.scope_labels)
    tools_image: str | None = None
    kind: str = KIND

    def place(
        self, mount: Mount, stack: StackSpec, data_bytes: int, ctx: BuildContext
    ) -> AbstractContextManager[Target]:
        if self.tools_image is None:
            image = docker_api.image_on(self.daemon, self.url, tools(ctx), ctx, self.exits, kind="docker-host-image")
            self.tools_image = image
        return _placement(self, self.tools_image, mount, stack, data_bytes, ctx)

    def start_in(self, target: Target, argv: Sequence[str], log: Path) -> handle.Handle:
        """By the daemon's exec, its host PID known (a stack with clients: its containers are found here)."""
        return handle.start_exec(self.daemon.api, str(target.info["container_id"]), argv, log, None)


@contextmanager
def start(mount: Mount, spec: EngineSpec, ctx: BuildContext) -> Iterator[DockerHostEngine]:
    """The run's row on the daemon at ``spec.node``, once it answers; nothing of the daemon is changed."""
    assert spec.daemon is not None  # the spec requires the URL
    daemon = host_api.connect(spec.daemon)
    with contextlib.ExitStack() as exits:
        exits.callback(daemon.close)
        found = host_api.facts(daemon.info())
        labels = exits.enter_context(host_api.run_scope(spec.daemon, ctx))
        images = exits.enter_context(contextlib.ExitStack())  # closed before the engine's row goes
        yield DockerHostEngine(spec.daemon, daemon, found, images, labels)


def failure(rc: int | None, stderr: str) -> str | None:
    """An exec the daemon could not run: the stack must be rebuilt, the tool is not to blame."""
    return "engine-error" if rc == EXEC_FAILED_RC and f"{KIND} exec" in stderr else None


@contextmanager
def _placement(
    engine: DockerHostEngine, image: str, mount: Mount, stack: StackSpec, data_bytes: int, ctx: BuildContext
) -> Iterator[Target]:
    """A container holding /data at the placement, idle, with no network; every command an exec into it."""
    kind = stack.placement.kind
    name = f"lb-{secrets.token_hex(4)}"
    with contextlib.ExitStack() as exits:
        kwargs = {
            "image": image,
            "entrypoint": IDLE,  # the archive's own (a command would be appended to it as arguments)
            "network_mode": "none",
            **tuning_options(stack.tuning),
            **limit_kwargs(stack.limits, ""),  # no block-I/O limit reaches here (spec/engines/docker_host.py)
            **_data(engine, name, kind, data_bytes, ctx, exits),
        }
        made = exits.enter_context(host_api.container(engine.daemon, engine.url, name, kwargs, engine.labels, ctx))
        run = exec_in(cast(ApiDaemon, Daemon(engine.daemon)), made, kill_inside(made))
        table = _mount_table(run)
        info = {
            "placement": kind,
            "container": made.id[:12],
            "image": image,
            "daemon_url": docker_api.shown(engine.url),
            "daemon": engine.facts,
            # Its processes are another daemon's, perhaps on another machine: this host's /proc cannot tell
            # them apart, so `bottleneck` and `contended` skip (monitor_checks).
            "unseen": f"{docker_api.shown(engine.url)} (a Docker host)",
            "fio_sha256": binary_digests(["fio"])["fio"],  # the image holds this host's fio
            "data_mount": data_mount(table),
            **_limits(made, stack.limits),
            **(_here(made) if stack.clients is not None else {}),
        }
        yield Target(run, put_in(made), DATA, False, mount.device, KIND, info, mount_table=table)


def _here(made: Container) -> dict[str, Any]:
    """The container's first process where this host's /proc has it, in a cgroup naming the container (the
    daemon's PID alone could be another machine's): what a fio server of many clients is reached through,
    and its cgroup, which the monitor reads. Nothing where it is not here."""
    made.reload()
    pid = int(made.attrs["State"].get("Pid") or 0)
    try:
        text = (PROC / str(pid) / "cgroup").read_text() if pid > 0 else ""
    except OSError:
        return {}
    if made.id not in text:
        return {}
    dirs = parse_proc_cgroup(text)
    return {"pid": pid, "container_id": made.id, "cgroup": {c: str(path) for c, path in dirs.items()}}


def _data(
    engine: DockerHostEngine, name: str, kind: str, data_bytes: int, ctx: BuildContext, exits: contextlib.ExitStack
) -> dict[str, Any]:
    """How /data is provided, as Docker SDK arguments (a volume it needs is entered on ``exits``)."""
    if kind == "writable-layer":
        return {}
    if kind == "volume":
        made = exits.enter_context(host_api.volume(engine.daemon, engine.url, name, engine.labels, ctx))
        return {"volumes": {made: {"bind": DATA, "mode": "rw"}}}
    if kind == "tmpfs":
        return {"tmpfs": {DATA: f"size={data_bytes + TMPFS_HEADROOM}"}}
    raise PrerequisiteError(f"placement {kind!r} is not a Docker host's (writable-layer, volume, tmpfs)")


def _mount_table(run: Exec) -> Callable[[], str]:
    """The container's own mount table, read by exec (its daemon's PIDs may be another machine's)."""
    return lambda: run(["cat", "/proc/self/mountinfo"], MOUNT_TABLE_S).check().stdout


def data_mount(table: Callable[[], str]) -> dict[str, Any]:
    """What /data is in the container, as its own mount table says: the storage driver's filesystem
    (writable-layer), the daemon's data-root filesystem (volume), or a tmpfs."""
    try:
        held = mountinfo.holding(mountinfo.parse(table()), DATA)
    except (OSError, LayerbenchError, mountinfo.MountinfoError) as exc:
        return {"unknown": f"cannot read the container's mounts: {exc}"}
    if not held:
        return {"unknown": f"no mount holds {DATA} in the container's mount table"}
    entry = held[0]
    return {"source": entry.source, "fs_type": entry.fs_type, "root": entry.root, "mount_point": entry.mount_point}


def _limits(made: Container, limits: Limits) -> dict[str, Any]:
    """The limits asked, and as the daemon set them (its inspect of the container; not its kernel's cgroup)."""
    asked = limits.model_dump(mode="json", exclude_none=True)
    if not asked:
        return {"limits": asked}
    made.reload()
    return {"limits": asked, "limits_set": limits_set(made.attrs["HostConfig"])}


def limits_set(host_config: dict[str, Any]) -> dict[str, object]:
    """A container's limits as its daemon records them, in the units of ``Limits``; None: no limit."""
    nano = host_config.get("NanoCpus") or 0
    return {
        "cpus": nano / 1e9 if nano else None,
        "memory": host_config.get("Memory") or None,
        "cpuset": host_config.get("CpusetCpus") or None,
    }
