"""The Docker Swarm engine: the workload in a one-replica service pinned to a named node of a swarm.

A stack's engine layer is the run's row on the swarm (the manager's URL, the node's socket); its
placement is a service (``sleep infinity``, restart policy none, constrained to
``node.hostname==<node>``, labelled with the run) holding /data:

- bind: a bind mount of a directory on the filesystem under test;
- volume: a named volume of the node's daemon, local driver, bound to a directory on that filesystem
  (``type=none, o=bind, device=<dir>``: Docker's own way to put a volume on a chosen filesystem);
- tmpfs: a tmpfs mount (a control, as on Docker).

(No writable-layer: a task's own layer is under the node daemon's data-root, not on the filesystem
layerbench builds, so the stack's label would lie; spec/engines/swarm.py refuses it.)

The manager schedules; everything else goes through the node's own daemon (its label
``layerbench.socket``): the tools image is loaded there from a docker-archive, and every command of a
trial is an exec into the task's container, as on Docker. Limits are the service's resource limits
(cpus, memory), read back from the kernel's cgroup of the container's first process.

A database server gets a service of its own from a second image (the server's binaries), started by
exec as on Docker; the service publishes the server's port in host mode without a number, so the node
picks a free one, and the client on this host reaches it at the node's swarm address. Host mode publishes
on every interface of the node: anyone who reaches the node reaches the server, which therefore requires
the run's password (docs/how-to/server-security.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
import secrets
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, cast

import docker
from docker.types import EndpointSpec, Resources, RestartPolicy
from docker.types import Mount as SwarmMount

from layerbench.errors import PrerequisiteError
from layerbench.spec.models import EngineSpec, Limits, StackSpec
from layerbench.stack import docker_api, handle, mountinfo
from layerbench.stack.cgroups import majmin, process_dirs, read_limits
from layerbench.stack.dockerd import ApiDaemon
from layerbench.stack.engines.container import tools
from layerbench.stack.engines.swarm import swarm_api
from layerbench.stack.fleet import (
    IMAGE_TOOLS,
    Endpoint,
    ServerError,
    Starter,
    Where,
    bring_up,
    data_bytes,
    server_config,
    start_exec,
    write_in,
)
from layerbench.stack.image import binary_digests, resolve
from layerbench.stack.placement import DATA, IDLE, TMPFS_HEADROOM, exec_in, host_dir, put_in
from layerbench.stack.route import source_address
from layerbench.stack.target import BuildContext, Mount, Target
from layerbench.workloads.servers import SERVER_UID, ServerDef

# What the Docker API's exec answers when the container or its daemon is gone (stack/placement.py).
EXEC_FAILED_RC = 125
STOP_GRACE_NS = 1_000_000_000  # sleep as PID 1 ignores SIGTERM: a second, not Docker's ten


@dataclass
class NodeDaemon:
    """The node's own daemon, as placement.exec_in uses a ApiDaemon: its client, and a kind for messages."""

    client: docker.DockerClient
    kind: str = "swarm"


@dataclass
class SwarmEngine:
    manager: docker.DockerClient
    manager_at: str
    node: swarm_api.NodeFacts
    daemon: docker.DockerClient  # the node's own
    exits: contextlib.ExitStack  # what lives as long as the engine: the tools image on the node
    labels: dict[str, str]  # what its services and volumes carry (docker_api.scope_labels)
    tools_image: str | None = None
    kind: str = "swarm"

    @property
    def socket(self) -> str:
        assert self.node.socket is not None  # start() refuses a node without one
        return self.node.socket

    def place(
        self, mount: Mount, stack: StackSpec, data_bytes: int, ctx: BuildContext
    ) -> AbstractContextManager[Target]:
        if self.tools_image is None:
            self.tools_image = self._load(tools(ctx), ctx)
        return _placement(self, self.tools_image, mount, stack, data_bytes, ctx)

    @contextmanager
    def shared_places(
        self, mount: Mount, stack: StackSpec, data_bytes: int, count: int, ctx: BuildContext
    ) -> Iterator[list[Target]]:
        """``count`` services on one volume or bind directory."""
        if self.tools_image is None:
            self.tools_image = self._load(tools(ctx), ctx)
        with contextlib.ExitStack() as exits:
            mounts = _mounts(self, f"lb-{secrets.token_hex(4)}", stack.placement.kind, mount, data_bytes, ctx, exits)
            made = partial(_placement, self, self.tools_image, mount, stack, data_bytes, ctx, mounts=mounts)
            yield [exits.enter_context(made()) for _ in range(count)]

    def server_starter(self, definition: ServerDef, exits: contextlib.ExitStack, ctx: BuildContext) -> Starter:
        """A database fleet here: a service per server on the node, reached from this host at the port the
        node publishes for it."""
        binaries = {**resolve(IMAGE_TOOLS), **definition.binaries(ctx.cache_dir)}
        return partial(_server, self, self._load(binaries, ctx, definition.files(ctx.cache_dir)))

    def start_in(self, target: Target, argv: Sequence[str], log: Path) -> handle.Handle:
        """By the node's own daemon, as every command of a trial (its task's PID is this host's)."""
        return handle.start_exec(self.daemon.api, str(target.info["container_id"]), argv, log, None)

    def _load(self, binaries: dict[str, str], ctx: BuildContext, files: tuple[str, ...] = ()) -> str:
        """The image of these host binaries on the node: loaded there unless the node has it."""
        return docker_api.image_on(self.daemon, self.socket, binaries, ctx, self.exits, files)


@contextmanager
def start(mount: Mount, spec: EngineSpec, ctx: BuildContext) -> Iterator[SwarmEngine]:
    """The run's row on the swarm, once the pinned node is found ready, with a daemon of its own here."""
    url = swarm_api.manager_url()
    manager = swarm_api.connect(url)
    assert url is not None  # connect refuses none
    with contextlib.ExitStack() as exits:
        exits.callback(manager.close)
        facts = swarm_api.nodes(manager)
        node = facts.get(spec.node or "")
        if node is None or not node.ready or node.unreachable:
            state = (
                f"is not in the swarm (its nodes: {', '.join(sorted(facts))})"
                if node is None
                else "is not ready"
                if not node.ready
                else f"cannot be used from here: {node.unreachable}"
            )
            raise PrerequisiteError(f"swarm node {spec.node!r} {state}")
        assert node.socket is not None  # reachable, so labelled
        daemon = docker_api.client(node.socket)
        exits.callback(daemon.close)
        labels = exits.enter_context(swarm_api.run_scope(url, node, ctx))
        images = exits.enter_context(contextlib.ExitStack())  # closed before the engine's row goes
        yield SwarmEngine(manager, url, node, daemon, images, labels)


def failure(rc: int | None, stderr: str) -> str | None:
    """An exec the node's daemon could not run: the stack must be rebuilt, the tool is not to blame."""
    return "engine-error" if rc == EXEC_FAILED_RC and "swarm exec" in stderr else None


@contextmanager
def _server(
    engine: SwarmEngine,
    image: str,
    index: int,
    stack: StackSpec,
    definition: ServerDef,
    limits: Limits,
    mount: Mount,
    ctx: BuildContext,
) -> Iterator[Endpoint]:
    """One server in a service of its own: its data at the placement, prepared, configured and started by
    exec as the server's user, its port published by the node (host mode, a port the node picks)."""
    assert stack.server is not None  # a fleet is built only for stacks with a server
    placed = stack.model_copy(update={"limits": limits})
    port = definition.default_port
    with _placement(engine, image, mount, placed, data_bytes(stack.server), ctx, port) as target:
        data = f"{target.path}/{definition.kind}"
        for step in (["mkdir", "-p", data], ["chown", f"{SERVER_UID}:{SERVER_UID}", target.path, data]):
            target.run(step, 60).check()
        config = server_config(stack, data, "0.0.0.0", port, limits, ctx.cache_dir, ctx.password)
        if "published_port" not in target.info:
            raise ServerError(f"{definition.kind} #{index}: node {engine.node.name} published no port for it")
        host, published = engine.node.addr, int(target.info["published_port"])
        # What the server sees connecting: this host's address toward the node (the port is forwarded).
        config = dataclasses.replace(config, client_address=source_address(host, ctx.runner))
        container = engine.daemon.containers.get(target.info["container_id"])
        where = Where(partial(start_exec, engine.daemon.api, container.id), partial(write_in, container))
        with bring_up(definition, config, where, ctx, index, host, published) as h:
            yield Endpoint(index, host, published, config.memory, limits, h, dict(target.info))


@contextmanager
def _placement(
    engine: SwarmEngine,
    image: str,
    mount: Mount,
    stack: StackSpec,
    data_bytes: int,
    ctx: BuildContext,
    port: int | None = None,
    mounts: list[SwarmMount] | None = None,
) -> Iterator[Target]:
    """A service holding /data at the placement (``mounts`` when given: ones other services share); with
    ``port``, that port published by the node."""
    kind = stack.placement.kind
    name = f"lb-{secrets.token_hex(4)}"
    with contextlib.ExitStack() as exits:
        if mounts is None:
            mounts = _mounts(engine, name, kind, mount, data_bytes, ctx, exits)
        body = _service(name, image, engine.node.name, stack.limits, mounts, engine.labels, port)
        made, container = exits.enter_context(
            swarm_api.service(engine.manager, engine.manager_at, engine.daemon, engine.socket, body, ctx)
        )
        info = {"placement": kind, "service": name, "service_id": made.id[:12], **_info(engine, container, image)}
        info.update(_limits(container, stack.limits, mount))
        run = exec_in(cast(ApiDaemon, NodeDaemon(engine.daemon)), container)
        yield Target(run, put_in(container), DATA, False, mount.device, "swarm", info)


def _mounts(
    engine: SwarmEngine,
    name: str,
    kind: str,
    mount: Mount,
    data_bytes: int,
    ctx: BuildContext,
    exits: contextlib.ExitStack,
) -> list[SwarmMount]:
    if kind == "tmpfs":
        return [SwarmMount(DATA, None, type="tmpfs", tmpfs_size=data_bytes + TMPFS_HEADROOM)]
    if kind not in ("bind", "volume") or mount.mountpoint is None:
        raise PrerequisiteError(f"placement {kind!r} is not a swarm placement (bind, volume, tmpfs)")
    path = exits.enter_context(host_dir(mount.mountpoint / f"{name}-data", ctx))
    if kind == "bind":
        return [SwarmMount(DATA, str(path), type="bind")]
    volume = exits.enter_context(swarm_api.bound_volume(engine.daemon, engine.socket, name, path, engine.labels, ctx))
    return [SwarmMount(DATA, volume, type="volume")]


def _service(
    name: str,
    image: str,
    node: str,
    limits: Limits,
    mounts: list[SwarmMount],
    labels: dict[str, str],
    port: int | None = None,
) -> dict[str, Any]:
    """The Docker SDK's arguments of the cell's service: one task on ``node``, never restarted, reached by
    name only (dnsrr: no virtual IP, no ingress: a kernel without IPVS runs it too), or at a port the
    node publishes itself (host mode: the node picks a free one)."""
    ports = [{"TargetPort": port, "Protocol": "tcp", "PublishMode": "host"}] if port else None
    return {
        "image": image,
        "command": IDLE,
        "name": name,
        "labels": labels,
        "container_labels": labels,
        "constraints": [f"node.hostname=={node}"],
        "restart_policy": RestartPolicy(condition="none"),
        "endpoint_spec": EndpointSpec(mode="dnsrr", ports=ports),
        "mounts": mounts,
        "stop_grace_period": STOP_GRACE_NS,
        **({"resources": Resources(**_resources(limits))} if _resources(limits) else {}),
    }


def _resources(limits: Limits) -> dict[str, int]:
    """cpus and memory; cpuset and block-I/O limits have no service field (spec/engines/swarm.py refuses them)."""
    found = {}
    if limits.cpus is not None:
        found["cpu_limit"] = round(limits.cpus * 1e9)
    if limits.memory is not None:
        found["mem_limit"] = int(limits.memory)
    return found


def _info(engine: SwarmEngine, container: Any, image: str) -> dict[str, Any]:
    container.reload()
    pid = int(container.attrs["State"]["Pid"])  # a host PID: the node's daemon is on this host
    (data, *_) = mountinfo.holding(mountinfo.parse(mountinfo.read(pid)), DATA)
    published = [p for ports in (container.attrs["NetworkSettings"].get("Ports") or {}).values() for p in ports or []]
    return {
        "node": engine.node.name,
        "container": container.id[:12],
        "container_id": container.id,
        **({"published_port": int(published[0]["HostPort"])} if published else {}),
        "image": image,
        "fio_sha256": binary_digests(["fio"])["fio"],  # the image holds this host's fio
        "pid": pid,
        # What /data is in the task, as its own mount table says: the filesystem under test (bind, volume)
        # or a tmpfs; a volume that landed under the node's data-root instead would show its filesystem.
        "data_mount": {"source": data.source, "fs_type": data.fs_type, "root": data.root},
    }


def _limits(container: Any, limits: Limits, mount: Mount) -> dict[str, Any]:
    pid = int(container.attrs["State"]["Pid"])
    dirs = process_dirs(pid)
    found: dict[str, Any] = {
        "limits": limits.model_dump(mode="json", exclude_none=True),
        "cgroup": {controller: str(path) for controller, path in dirs.items()},  # for the monitor
    }
    if found["limits"]:
        # What the kernel enforces, not what Swarm accepted: the limit-applied check compares.
        found["limits_enforced"] = read_limits(dirs, majmin(mount.device.path))
    return found
