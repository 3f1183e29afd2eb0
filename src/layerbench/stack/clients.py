"""The placement layer of a stack with many clients (spec/clients.py): N targets of one engine.

Natively each client is a directory of its own on the filesystem under test
(``lb-data-c0-<tag>``, ...), or, shared, one directory for all. In a container engine
each client is a container of its own with the stack's placement (its own
volume, bind directory, writable layer or tmpfs, each on the same filesystem),
or, shared, N containers on one volume (or one bind directory). On Swarm each
client is a service of its own, on Kubernetes a pod of its own (its own claim of
the StorageClass, hostPath, local volume or emptyDir); shared, every service on
one volume or bind directory, every pod on one claim or host directory. Shared
targets are each engine's to make (``SharesPlaces.shared_places``).

Each target then runs a fio server on a Unix socket while a trial runs
(``serving``), exec'd by its engine (``ExecsInTargets``); the host reaches a
container's socket through the container's root (``/proc/<pid>/root``: every
such target's process is this host's), so no server listens on any network
address, on a pod network or a swarm's either.

The clients may be dealt over several nodes of a cluster, or several Docker hosts (``clients.nodes``):
the engine's own node takes its share, and every other node an engine of its own (started as the stack's
engine is, with that node), which goes with the clients. The rules allow only nodes of this machine,
whose containers' processes this host sees.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from layerbench.errors import PrerequisiteError, ToolError
from layerbench.spec.clients import ClientsSpec
from layerbench.spec.engines import HOST_ENGINE
from layerbench.spec.models import StackSpec
from layerbench.stack import handle as handles
from layerbench.stack.ledger import tracked
from layerbench.stack.placement import host_dir, recorded_run
from layerbench.stack.protocols import ExecsInTargets
from layerbench.stack.target import BuildContext, Mount, Target
from layerbench.workloads import fio_clients

SOCKET_IN_CONTAINER = "/tmp/lb-fio.sock"
READY_S = 15.0  # a fio server makes its socket at once; a daemon's exec may take a moment
STOP_GRACE_S = 5.0
StartIn = Callable[[Target, Sequence[str], Path], handles.Handle]
# An engine of the stack's kind on another node (the builder's: started as the stack's engine is).
EngineOn = Callable[[str], AbstractContextManager[Any]]


@dataclass
class ClientSet:
    """Every client's target, and how the stack placed them."""

    spec: ClientsSpec
    targets: list[Target]
    engine: str
    # How each target's engine execs a server in it (``ExecsInTargets.start_in``); empty: natively, a process here.
    starts: list[StartIn] = field(default_factory=list)

    @property
    def first(self) -> Target:
        return self.targets[0]


@contextmanager
def client_targets(
    stack: StackSpec, mount: Mount, engine: Any, data_bytes: int, ctx: BuildContext, engine_on: EngineOn
) -> Iterator[ClientSet]:
    """The stack's N targets, torn down on the way out (each recorded in the ledger by what makes it)."""
    spec = stack.clients
    assert spec is not None  # the builder sends only stacks with clients here
    with contextlib.ExitStack() as exits:
        if not isinstance(engine, ExecsInTargets):  # the rules allow native else (traits.clients)
            yield ClientSet(spec, _native(stack, mount, spec, exits, ctx), engine.kind)
            return
        engines = _engines(stack, engine, engine_on, exits)
        made = _containers(stack, mount, engines, spec, data_bytes, exits, ctx)
        yield ClientSet(spec, [t for t, _ in made], engine.kind, [e.start_in for _, e in made])


def _engines(stack: StackSpec, engine: Any, engine_on: EngineOn, exits: contextlib.ExitStack) -> list[Any]:
    """Each client's engine: the stack's on its own node, one of the same kind on each other node asked."""
    spec = stack.clients
    assert spec is not None
    if not spec.nodes:
        return [engine] * spec.count
    on = {n: engine if n == stack.engine.node else exits.enter_context(engine_on(n)) for n in spec.nodes}
    return [on[str(spec.node_of(i, stack.engine.node))] for i in range(spec.count)]


def _native(
    stack: StackSpec, mount: Mount, spec: ClientsSpec, exits: contextlib.ExitStack, ctx: BuildContext
) -> list[Target]:
    if mount.mountpoint is None or stack.placement.kind != "host-dir":
        raise PrerequisiteError(f"clients natively need a directory on a filesystem, not {stack.placement.kind}")

    def put(name: str, text: str) -> str:
        path = ctx.work_dir / name
        path.write_text(text)
        return str(path)

    def run(argv: Any, timeout: float) -> Any:
        return recorded_run(argv, timeout, ctx)

    tag = uuid.uuid4().hex[:6]  # held stacks may share the filesystem
    shared = exits.enter_context(host_dir(mount.mountpoint / f"lb-data-shared-{tag}", ctx)) if spec.shared else None
    targets = []
    for i in range(spec.count):
        own = mount.mountpoint / f"lb-data-{fio_clients.client_name(i)}-{tag}"
        path = shared or exits.enter_context(host_dir(own, ctx))
        info = {"placement": "host-dir", "client": i, "socket": str(ctx.work_dir / _native_socket(i))}
        targets.append(Target(run, put, str(path), False, mount.device, HOST_ENGINE, info))
    return targets


def _containers(
    stack: StackSpec,
    mount: Mount,
    engines: list[Any],
    spec: ClientsSpec,
    data_bytes: int,
    exits: contextlib.ExitStack,
    ctx: BuildContext,
) -> list[tuple[Target, Any]]:
    """Each client's target with the engine that made it (client i's, ``engines[i]``)."""
    if spec.shared:  # the rules allow it only on an engine that SharesPlaces, and on one node
        made = exits.enter_context(engines[0].shared_places(mount, stack, data_bytes, spec.count, ctx))
    else:
        made = [exits.enter_context(e.place(mount, stack, data_bytes, ctx)) for e in engines]
    for i, target in enumerate(made):
        if "pid" not in target.info:  # the rules refuse another machine's node; a target without one says so
            raise PrerequisiteError(f"clients: {engines[i].kind} gave client {i} no process on this host to reach")
        target.info.update(client=i, placement=stack.placement.kind, shared=spec.shared)
        target.info["socket"] = f"/proc/{target.info['pid']}/root{SOCKET_IN_CONTAINER}"
    return list(zip(made, engines, strict=True))


def _native_socket(index: int) -> str:
    return f"fio-c{index}.sock"


@dataclass(frozen=True)
class Serving:
    """Where the fio client runs (``cwd``) and the name of each server's socket there: a symbolic link to it,
    so the client's connect strings (and fio's "hostname" of each client) are short and name the client."""

    cwd: Path
    names: list[str]


@contextmanager
def serving(clients: ClientSet, ctx: BuildContext) -> Iterator[Serving]:
    """A fio server in every target, each on its Unix socket, recorded in the ledger, and a directory of links
    to their sockets for the client; stopped and removed on the way out."""
    with contextlib.ExitStack() as exits:
        for i, t in enumerate(clients.targets):
            exits.enter_context(_server(t, clients.starts[i] if clients.starts else None, ctx))
        cwd = exits.enter_context(host_dir(ctx.work_dir / f"fio-client-{uuid.uuid4().hex[:8]}", ctx))
        names = []
        for i, t in enumerate(clients.targets):
            name = fio_clients.socket_name(i)
            (cwd / name).symlink_to(str(t.info["socket"]))
            names.append(name)
        yield Serving(cwd, names)


@contextmanager
def _server(target: Target, start_in: StartIn | None, ctx: BuildContext) -> Iterator[handles.Handle]:
    index = int(target.info["client"])
    in_container = start_in is not None
    log = ctx.work_dir / f"fio-server-c{index}.log"
    host_socket = Path(str(target.info["socket"]))
    if not in_container:  # in the work directory, by a relative name: a socket's path has 107 bytes
        cd = ["sh", "-c", 'cd "$1" && shift && exec "$@"', "sh", str(host_socket.parent)]
        argv = [*cd, *fio_clients.server_argv(host_socket.name)]
    else:
        argv = fio_clients.server_argv(SOCKET_IN_CONTAINER)

    def create(rid: int) -> handles.Handle:
        with contextlib.suppress(FileNotFoundError):
            host_socket.unlink()  # a socket left by a killed run's server: fio would refuse to bind
        if start_in is None:
            h: handles.Handle = handles.start_native(argv, log, None)
        else:
            h = start_in(target, argv, log)
        ctx.ledger.update(rid, pid=h.pid, start_time=handles.start_time(h.pid))
        return h

    def remove(h: handles.Handle) -> None:
        handles.stop(h, signal.SIGTERM, STOP_GRACE_S)
        with contextlib.suppress(FileNotFoundError):
            host_socket.unlink()
        log.unlink(missing_ok=True)

    with tracked(ctx.ledger, "server", f"fio:c{index}", create, remove, server="fio", socket=str(host_socket)) as h:
        _wait_socket(h, host_socket, argv)
        yield h


def _wait_socket(h: handles.Handle, path: Path, argv: list[str]) -> None:
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            if stat.S_ISSOCK(os.stat(path).st_mode):
                return
        if not h.alive():
            raise ToolError(argv, h.wait(1.0), f"fio's server exited before listening:\n{handles.log_tail(h.log)}")
        time.sleep(0.05)
    raise ToolError(argv, None, f"fio's server made no socket at {path} within {READY_S:.0f}s")
