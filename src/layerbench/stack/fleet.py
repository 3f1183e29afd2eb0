"""The servers of a database stack: ``instances`` of them on the placement, all up at once.

Natively each instance is a server process on 127.0.0.1 with its data in its
own directory on the filesystem under test. In Docker each instance is a
container of its own (its own volume, bind directory or writable layer, its
own limits), listening at its address on the private bridge network, or on
127.0.0.1 with the host-network tuning. Every server layerbench configures
requires the run's password (docs/how-to/server-security.md). In both, the server runs as an
unprivileged user, is recorded before it starts, must answer its readiness
probe, and is shut down with its own clean-shutdown signal when the stack
ends; one that dies or never answers fails with its log's tail.
"""

from __future__ import annotations

import dataclasses
import io
import os
import signal
import tarfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, cast

from layerbench.errors import LayerbenchError, PrerequisiteError
from layerbench.records.facts import Facts
from layerbench.records.info import BudgetInfo, FleetInfo
from layerbench.spec.databases import MIN_MEMORY, ServerSpec, tuned
from layerbench.spec.engines import HOST_ENGINE
from layerbench.spec.models import Limits, StackSpec
from layerbench.spec.profiles import Budget, instance_limits, needs_bandwidth
from layerbench.spec.traits import traits
from layerbench.stack import handle as handles
from layerbench.stack import image_source
from layerbench.stack.calibrate import device_bandwidth
from layerbench.stack.dockerd import ApiDaemon
from layerbench.stack.image import resolve
from layerbench.stack.ledger import tracked
from layerbench.stack.network import Network, bridge_network
from layerbench.stack.placement import Role, host_dir, tuning_options
from layerbench.stack.ports import free_port
from layerbench.stack.protocols import BoundedNode, ContainerEngine, Engine, StartsServers
from layerbench.stack.target import BuildContext, Device, Mount, Target
from layerbench.workloads.servers import SERVER_UID, SERVERS, ServerConfig, ServerDef
from layerbench.workloads.servers import image as image_server

PREPARE_TIMEOUT_S = 300.0
# A server is asked whether it serves this often while it starts: each stack's first trial waits on the
# answer (a probe is a connection or pg_isready, cheap beside a start of a second or more).
READY_POLL_S = 0.05
MAX_CLIENTS = 256  # per server: YCSB threads or pgbench clients, checked by the spec rules
IMAGE_TOOLS = ["sleep", "mkdir", "chown"]


class ServerError(LayerbenchError):
    """A database server did not start or did not answer; the message carries its log's tail."""


@dataclass(frozen=True)
class Endpoint:
    index: int
    host: str  # where the client on the host reaches it
    port: int
    memory: int  # what the server is sized to
    limits: Limits
    handle: handles.Handle
    info: dict[str, Any] = field(default_factory=dict)  # container id, cgroup dirs, limits read back

    @property
    def facts(self) -> Facts:
        return Facts.of(self.info)


@dataclass(frozen=True)
class Fleet:
    server: ServerSpec
    definition: ServerDef
    endpoints: list[Endpoint]
    device: Device
    engine: str  # the engine's kind: "native", "docker"
    info: FleetInfo = field(default_factory=FleetInfo)  # the server's kind and the budget, as trials record them
    # What each instance holds, once YCSB loaded it (run/kinds/database.py), grown by each trial's inserts.
    records: list[int] = field(default_factory=list)


def server_memory(spec: ServerSpec, limits: Limits) -> int:
    """The server is sized to its memory, or to its container's limit when that is smaller."""
    return min(spec.memory, limits.memory) if limits.memory else spec.memory


@contextmanager
def fleet(stack: StackSpec, mount: Mount, engine: Engine | None, ctx: BuildContext) -> Iterator[Fleet]:
    """``engine`` is a running engine of stack/engines (native, or one with images and containers); None: native."""
    assert stack.server is not None  # a fleet is built only for stacks with a server
    definition = image_server.definition(stack.server) if stack.server.kind == "image" else SERVERS[stack.server.kind]
    budget = ctx.budget or Budget(float(os.cpu_count() or 1), 0, stack.instances)
    if isinstance(engine, BoundedNode) and stack.profile != "none":  # a node with less room than this host
        budget = engine.budget(budget)
    if needs_bandwidth(stack, budget):
        budget = budget.with_bandwidth(*device_bandwidth(mount, ctx))
    with ExitStack() as exits:
        kind = HOST_ENGINE if engine is None else engine.kind
        start: Starter = _natively
        if isinstance(engine, StartsServers):  # an engine that starts servers its own way (a VM, a pod)
            start = engine.server_starter(definition, exits, ctx)
        elif stack.server.kind == "image":  # the rules send image servers to container engines only
            start = _from_image(cast(ContainerEngine, engine), stack, exits, ctx)
        elif traits(kind).layer:
            start = _in_container(cast(ContainerEngine, engine), stack, definition, mount, exits, ctx)
        endpoints = []
        for i in range(stack.instances):
            limits = instance_limits(stack, budget, i, os.cpu_count() or 1)
            endpoints.append(exits.enter_context(start(i, stack, definition, limits, mount, ctx)))
        info = FleetInfo(server=definition.kind, budget=BudgetInfo.from_json(dataclasses.asdict(budget)))
        yield Fleet(stack.server, definition, endpoints, mount.device, kind, info)


def server_config(
    stack: StackSpec, data_dir: str, listen: str, port: int, limits: Limits, cache_dir: Path, password: str = ""
) -> ServerConfig:
    """``password``: the run's (BuildContext.password), which the server will require of its clients."""
    assert stack.server is not None
    memory = server_memory(stack.server, limits)
    least = MIN_MEMORY.get(stack.server.kind, 0)
    if memory < least:
        # A resource profile's share is known only now (the budget is the host's, or the spec's resources).
        raise ServerError(
            f"{stack.server.name} needs at least {least // 2**20} MiB and would get {memory // 2**20} MiB "
            "(its container's memory limit): give the profile a larger resources.memory or fewer instances"
        )
    return ServerConfig(data_dir, listen, port, memory, stack.server, MAX_CLIENTS, cache_dir, password=password)


@contextmanager
def _natively(
    index: int, stack: StackSpec, definition: ServerDef, limits: Limits, mount: Mount, ctx: BuildContext
) -> Iterator[Endpoint]:
    assert mount.mountpoint is not None  # rules: a server needs a filesystem
    with host_dir(mount.mountpoint / f"lb-db-{index}-{uuid.uuid4().hex[:6]}", ctx) as home:
        data = home / definition.kind
        for path in (home, data):
            path.mkdir(mode=0o700, exist_ok=True)
            os.chown(path, SERVER_UID, SERVER_UID)
        let_through(home.parent, ctx.work_dir)
        config = server_config(stack, str(data), "127.0.0.1", free_port(), limits, ctx.cache_dir, ctx.password)
        where = Where(partial(handles.start_native, user=SERVER_UID), _write_native)
        with bring_up(definition, config, where, ctx, index, "127.0.0.1") as h:
            yield Endpoint(index, "127.0.0.1", config.port, config.memory, limits, h, {"data_dir": str(data)})


Starter = Callable[[int, StackSpec, ServerDef, Limits, Mount, BuildContext], AbstractContextManager[Endpoint]]


def _in_container(
    engine: ContainerEngine, stack: StackSpec, definition: ServerDef, mount: Mount, exits: ExitStack, ctx: BuildContext
) -> Starter:
    """The per-instance starter for this engine: one image and one network for all instances."""
    docker: ApiDaemon = engine.daemon
    binaries = {**resolve(IMAGE_TOOLS), **definition.binaries(ctx.cache_dir)}
    image = engine.image(binaries, ctx, definition.files(ctx.cache_dir))
    network = None if tuned(stack.tuning, "host-network") else exits.enter_context(bridge_network(docker, ctx))

    @contextmanager
    def start(
        index: int, stack: StackSpec, definition: ServerDef, limits: Limits, mount: Mount, ctx: BuildContext
    ) -> Iterator[Endpoint]:
        options = _container_options(stack, network)
        room = data_bytes(stack.server)
        with engine.container(image, mount, stack.placement, limits, room, ctx, options) as target:
            host, listen, port = _address(docker, target, network, definition)
            data = f"{target.path}/{definition.kind}"
            for step in (["mkdir", "-p", data], ["chown", f"{SERVER_UID}:{SERVER_UID}", target.path, data]):
                target.run(step, 60).check()
            config = server_config(stack, data, listen, port, limits, ctx.cache_dir, ctx.password)
            container = docker.client.containers.get(target.info["container"])
            where = Where(partial(start_exec, docker.client.api, container.id), partial(write_in, container))
            with bring_up(definition, config, where, ctx, index, host) as h:
                yield Endpoint(index, host, port, config.memory, limits, h, dict(target.info))

    return start


def _from_image(engine: ContainerEngine, stack: StackSpec, exits: ExitStack, ctx: BuildContext) -> Starter:
    """The per-instance starter of an image server: the image in the daemon, one network for all instances.

    The container's own process is the server; its memory is the container's limit unless a profile
    or the spec's limits set one."""
    server = stack.server
    assert server is not None and server.image is not None and server.port is not None and server.data_path
    docker: ApiDaemon = engine.daemon
    image = image_source.acquire(docker, server.image)
    network = None if tuned(stack.tuning, "host-network") else exits.enter_context(bridge_network(docker, ctx))
    command = list(server.command) if server.command is not None else None
    role = Role(data_at=server.data_path, command=command, environment=list(server.env))

    @contextmanager
    def start(
        index: int, stack: StackSpec, definition: ServerDef, limits: Limits, mount: Mount, ctx: BuildContext
    ) -> Iterator[Endpoint]:
        limits = limits if limits.memory else limits.model_copy(update={"memory": server.memory})
        options = _container_options(stack, network)
        room = data_bytes(server)
        with engine.container(image, mount, stack.placement, limits, room, ctx, options, role) as target:
            host = "127.0.0.1" if network is None else _bridge_address(docker, target, network)
            config = server_config(stack, role.data_at, "0.0.0.0", server.port, limits, ctx.cache_dir)
            container = docker.client.containers.get(target.info["container"])
            with server_log(ctx.work_dir / f"image-{index}-{uuid.uuid4().hex[:6]}.log") as log:
                launch = partial(handles.follow_container, container, log)
                with serving(definition, config, launch, ctx, index, host) as h:
                    yield Endpoint(index, host, server.port, config.memory, limits, h, dict(target.info))

    return start


@dataclass(frozen=True)
class Where:
    """How to start a process (as the server's user) and write a file where the server lives."""

    start: Callable[[list[str], Path], handles.Handle]  # (argv, log)
    write: Callable[[str, str, str], None]  # (directory, name, text)


@contextmanager
def bring_up(
    definition: ServerDef,
    config: ServerConfig,
    where: Where,
    ctx: BuildContext,
    index: int,
    host: str,
    port: int | None = None,
) -> Iterator[handles.Handle]:
    """Prepare the data directory, write the config files, start the server; its log goes with it. The
    host reaches it at ``host``:``port`` (its own port unless one is forwarded to it)."""
    with server_log(ctx.work_dir / f"{definition.kind}-{index}-{uuid.uuid4().hex[:6]}.log") as log:
        for name, text in definition.setup_files(config).items():
            where.write(str(Path(config.data_dir).parent), name, text)
        for step in definition.prepare(config):
            _finish(where.start(step, log), step, definition, index)
        for name, text in definition.config_files(config).items():
            where.write(config.data_dir, name, text)
        launch = partial(where.start, definition.argv(config), log)
        with serving(definition, config, launch, ctx, index, host, port) as h:
            yield h


def _write_native(directory: str, name: str, text: str) -> None:
    """A file of the server's own, readable by it alone (it may hold the run's password)."""
    path = Path(directory) / name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchown(f.fileno(), SERVER_UID, SERVER_UID)
        f.write(text)


def start_exec(api: Any, container_id: str, argv: list[str], log: Path) -> handles.Handle:
    return handles.start_exec(api, container_id, argv, log, SERVER_UID)


def write_in(container: Any, directory: str, name: str, text: str) -> None:
    """A small file into the container, owned by the server's user (no shell in the image to write it)."""
    data = text.encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.uid, info.gid = len(data), 0o600, SERVER_UID, SERVER_UID
        tar.addfile(info, io.BytesIO(data))
    container.put_archive(directory, buf.getvalue())


def _container_options(stack: StackSpec, network: Network | None) -> dict[str, Any]:
    options: dict[str, Any] = {"network_mode": "host"} if network is None else {"network": network.name}
    return options | tuning_options(stack.tuning)


def _address(docker: ApiDaemon, target: Target, network: Network | None, definition: ServerDef) -> tuple[str, str, int]:
    """(where the host reaches it, what it binds, its port)."""
    if network is None:  # the host's network: loopback, a port of its own
        return "127.0.0.1", "127.0.0.1", free_port()
    # Its own network namespace: it listens at its address on the private bridge, where the host is.
    address = _bridge_address(docker, target, network)
    return address, address, definition.default_port


def _bridge_address(docker: ApiDaemon, target: Target, network: Network) -> str:
    container = docker.client.containers.get(target.info["container"])
    return str(container.attrs["NetworkSettings"]["Networks"][network.name]["IPAddress"])


# pgbench's tables per unit of scale, indexes included. Measured with PostgreSQL 15: scale 10 made a
# 165 MB database and a 331 MB data directory (its WAL the rest): hence twice, below.
PGBENCH_SCALE_BYTES = 16 * 10**6


def data_bytes(server: ServerSpec | None) -> int:
    """Room the data needs (a tmpfs placement is sized by it): YCSB's records and pgbench's tables (a
    PostgreSQL server holds both), their indexes and logs, twice."""
    assert server is not None
    pgbench = server.scale * PGBENCH_SCALE_BYTES if server.kind == "postgres" else 0
    return 2 * (server.record_count * server.record_bytes + pgbench) + 256 * 2**20


@contextmanager
def server_log(path: Path) -> Iterator[Path]:
    """The server's log: its tail goes into any error; the file itself goes with the server."""
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


@contextmanager
def serving(
    definition: ServerDef,
    config: ServerConfig,
    launch: Callable[[], handles.Handle],
    ctx: BuildContext,
    index: int,
    host: str,
    port: int | None = None,
) -> Iterator[handles.Handle]:
    """Start, record, wait until it serves at ``host``:``port`` (its own port by default); on the way out,
    its clean shutdown."""

    def create(rid: int) -> handles.Handle:
        h = launch()
        ctx.ledger.update(rid, pid=h.pid, start_time=handles.start_time(h.pid))
        return h

    def remove(h: handles.Handle) -> None:
        handles.stop(h, definition.stop_signal, definition.stop_grace_s)

    ident = f"{definition.kind}:{config.port}:{index}"
    with tracked(ctx.ledger, "server", ident, create, remove, server=definition.kind, data_dir=config.data_dir) as h:
        wait_ready(h, definition, host, port or config.port, ctx, index)
        yield h


def wait_ready(h: handles.Handle, definition: ServerDef, host: str, port: int, ctx: BuildContext, index: int) -> None:
    deadline = time.monotonic() + definition.ready_timeout_s
    while time.monotonic() < deadline:
        if not h.alive():
            raise ServerError(f"{definition.kind} #{index} exited before serving:\n{handles.log_tail(h.log)}")
        if definition.ready(host, port, ctx.runner, ctx.password if definition.authenticates else ""):
            return
        time.sleep(READY_POLL_S)
    raise ServerError(
        f"{definition.kind} #{index} did not answer on {host}:{port} within {definition.ready_timeout_s:.0f}s:\n"
        f"{handles.log_tail(h.log)}"
    )


def _finish(h: handles.Handle, step: list[str], definition: ServerDef, index: int) -> None:
    code = h.wait(PREPARE_TIMEOUT_S)
    if code is None:
        handles.stop(h, signal.SIGKILL, 1.0)
        raise ServerError(f"{definition.kind} #{index}: {Path(step[0]).name} ran over {PREPARE_TIMEOUT_S:.0f}s")
    if code != 0:
        raise ServerError(f"{definition.kind} #{index}: {Path(step[0]).name} exited {code}:\n{handles.log_tail(h.log)}")


def let_through(start: Path, run_dir: Path) -> None:
    """Let the server's user reach its data directory, which lies below the run's private directories.

    The run directory and its mountpoints are 0700 root; each one from ``start`` up to
    ``run_dir`` gets group nogroup with search (0710), so the server's user and no other
    can pass. Above ``run_dir`` nothing is changed: a directory there that the server's
    user cannot pass (a private --work-dir) is refused with the reason.
    """
    path = start
    while path == run_dir or run_dir in path.parents:
        if not passable(path):
            os.chown(path, -1, SERVER_UID)
            os.chmod(path, (path.stat().st_mode & 0o7777) | 0o010)
        path = path.parent
    check_passable(path)


def check_passable(path: Path) -> None:
    """Refuse, with the fix, if a directory from ``path`` up is one the server's user cannot pass."""
    for d in [path, *path.parents]:
        if d.exists() and not passable(d):
            raise PrerequisiteError(
                f"the database server's user (uid {SERVER_UID}) cannot pass {d} to reach its data",
                hint=f"chmod o+x {d}, or point --work-dir below a directory others may pass",
            )


def passable(path: Path) -> bool:
    """May the server's user (nobody:nogroup) search this directory?"""
    st = path.stat()
    if st.st_uid == SERVER_UID:
        return bool(st.st_mode & 0o100)
    if st.st_gid == SERVER_UID:
        return bool(st.st_mode & 0o010)
    return bool(st.st_mode & 0o001)
