"""Docker Swarm through the Docker SDK: the swarm's nodes, a run's services, and a node's own daemon.

Two daemons serve a Swarm cell. The manager (``--swarm-manager``, or $LAYERBENCH_SWARM_MANAGER)
schedules a one-replica service pinned to the node; the node's own daemon, found where the node's
label ``layerbench.socket`` says, holds what the service runs on: the tools image (loaded there from a
docker-archive, no registry needed), a volume, the task's container, which every command reaches by
exec. A node whose daemon does not answer on this host at that label is refused before anything runs:
its daemon is the only way in, and on this host is where the filesystem under test is.

Everything carries the label ``layerbench.run=<run id>`` and is recorded in the ledger before it
exists, with the manager's URL and the node's socket, so ``cleanup`` after a SIGKILL reaches both
without the option: the services first (waiting until their containers are gone from the node), then
the volumes and the image on the node, then, from the run's own row, whatever still carries the label.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
from docker.errors import DockerException, NotFound
from docker.models.containers import Container
from docker.models.services import Service

from layerbench.errors import LayerbenchError, PrerequisiteError
from layerbench.spec.engines.swarm import SwarmCaps, SwarmNode
from layerbench.stack.docker_api import RUN_LABEL, SCOPE_LABEL, client, first_line, remove_volume, scope_labels
from layerbench.stack.ledger import Resource, tracked
from layerbench.stack.protocols import HostProbe
from layerbench.stack.target import BuildContext

SOCKET_LABEL = "layerbench.socket"  # on a node: its own daemon's socket (our local swarm sets it)
MANAGER_ENV = "LAYERBENCH_SWARM_MANAGER"  # `--swarm-manager` sets it, as `--kubeconfig` sets KUBECONFIG
TASK_LIMIT_S = 300.0  # a guard against a task that never starts, not a deadline
GONE_LIMIT_S = 300.0
# A task's states from which it will never run (Swarm does not retry: the restart policy is none).
ENDED = frozenset({"complete", "failed", "shutdown", "rejected", "orphaned", "remove"})
HINT = f"pass --swarm-manager unix:///PATH/docker.sock (a manager's socket), or set {MANAGER_ENV}"


@dataclass(frozen=True)
class NodeFacts:
    name: str  # its hostname: what `engine.node` names and the service's constraint matches
    node_id: str
    ready: bool
    socket: str | None  # its own daemon's URL (the label), where it has one
    unreachable: str | None  # why layerbench cannot use that daemon from here; None: it can
    addr: str = ""  # the address the node has in the swarm: where a port it publishes is reached


def manager_url() -> str | None:
    return os.environ.get(MANAGER_ENV) or None


def connect(url: str | None) -> docker.DockerClient:
    """The swarm's manager at ``url``: a daemon that answers and is a manager of a swarm."""
    if not url:
        raise PrerequisiteError("no Docker Swarm manager named", hint=HINT)
    try:
        manager = client(url)
        state = manager.info().get("Swarm", {})
    except DockerException as exc:
        raise PrerequisiteError(f"no Docker daemon answers at {url}: {first_line(exc)}", hint=HINT) from exc
    if not state.get("ControlAvailable"):
        manager.close()
        said = state.get("LocalNodeState") or "unknown"
        raise PrerequisiteError(f"the daemon at {url} is not a swarm manager (its swarm state: {said})", hint=HINT)
    return manager


def nodes(manager: docker.DockerClient) -> dict[str, NodeFacts]:
    found = {}
    for n in manager.nodes.list():
        name = n.attrs["Description"]["Hostname"]
        socket = (n.attrs["Spec"].get("Labels") or {}).get(SOCKET_LABEL)
        ready = n.attrs["Status"]["State"] == "ready" and n.attrs["Spec"].get("Availability") == "active"
        addr = n.attrs["Status"].get("Addr", "")
        found[name] = NodeFacts(name, n.id, ready, socket, _unreachable(socket, n.id), addr)
    return found


def _unreachable(url: str | None, node_id: str) -> str | None:
    """Why the node's own daemon cannot be used from here: no label, not a socket on this host, another
    node's daemon. None where it answers as that node."""
    if not url:
        return f"it has no label {SOCKET_LABEL} (its own daemon's socket on this host)"
    if not (url.startswith("unix://") and Path(url.removeprefix("unix://")).is_socket()):
        return f"its label {SOCKET_LABEL}={url} is not a unix socket on this host"
    try:
        with contextlib.closing(client(url)) as daemon:
            answer = daemon.info().get("Swarm", {}).get("NodeID")
    except DockerException as exc:
        return f"no daemon answers at its label {SOCKET_LABEL}={url}: {first_line(exc)}"
    return None if answer == node_id else f"the daemon at its label {SOCKET_LABEL}={url} is another node ({answer})"


def swarm_nodes(url: str | None) -> dict[str, SwarmNode] | str:
    """The swarm's nodes as the feasibility rules see them, or why the swarm could not be reached."""
    try:
        with contextlib.closing(connect(url)) as manager:
            found = nodes(manager)
    except (PrerequisiteError, DockerException) as exc:
        return first_line(exc)
    return {name: SwarmNode(n.ready, n.unreachable) for name, n in found.items()}


def describe(url: str) -> list[tuple[str, bool, str]]:
    """`doctor`'s rows for the swarm: (what, usable, note): the manager, then each node."""
    try:
        with contextlib.closing(connect(url)) as manager:
            version = manager.version().get("Version", "?")
            found = nodes(manager)
    except (PrerequisiteError, DockerException) as exc:
        return [("swarm", False, first_line(exc))]
    rows = [("swarm", True, f"Docker {version}, manager at {url}")]
    for n in found.values():
        note = "not ready" if not n.ready else n.unreachable or f"its daemon at {n.socket}: bind, volume and tmpfs"
        rows.append((f"node {n.name}", n.ready and n.unreachable is None, note))
    return rows


@contextmanager
def run_scope(manager_at: str, node: NodeFacts, ctx: BuildContext) -> Iterator[dict[str, str]]:
    """The engine's row on this swarm, recorded first and removed last: whatever still carries its scope
    (services on the manager, volumes on the node) goes with it. Yields the labels its objects carry."""
    assert node.socket is not None  # a node without one is refused before this
    socket = node.socket
    labels = scope_labels(ctx.run_id)
    scope = {"label": f"{SCOPE_LABEL}={labels[SCOPE_LABEL]}"}
    with tracked(
        ctx.ledger, "swarm-run", labels[SCOPE_LABEL], lambda rid: None,
        lambda _: remove_labelled(manager_at, socket, scope), manager=manager_at, socket=socket, run=ctx.run_id,
    ):  # fmt: skip
        yield labels


def remove_labelled(manager_at: str, socket: str, selector: dict[str, str]) -> None:
    """Every service the selector finds (and its containers on the node), then every volume."""
    with contextlib.closing(client(manager_at)) as manager, contextlib.closing(client(socket)) as daemon:
        for service in manager.services.list(filters=selector):
            with contextlib.suppress(NotFound):
                service.remove()
        _wait(lambda: not _containers(daemon, selector), f"the containers of {selector['label']}")
        for volume in daemon.volumes.list(filters=selector):
            with contextlib.suppress(NotFound):
                volume.remove(force=True)


@contextmanager
def bound_volume(
    daemon: docker.DockerClient, socket: str, name: str, path: Path, labels: dict[str, str], ctx: BuildContext
) -> Iterator[str]:
    """A named volume of the local driver on the node whose data is ``path`` (a directory on the filesystem
    under test): ``type=none, o=bind, device=path``, Docker's way to put a volume on a chosen filesystem."""

    def create(rid: int) -> str:
        options = {"type": "none", "o": "bind", "device": str(path)}
        made = daemon.volumes.create(name, driver="local", driver_opts=options, labels=labels)
        return str(made.name)

    with tracked(ctx.ledger, "swarm-volume", name, create, lambda v: remove_volume(socket, v), socket=socket) as made:
        yield made


@contextmanager
def service(
    manager: docker.DockerClient,
    manager_at: str,
    daemon: docker.DockerClient,
    socket: str,
    body: dict[str, Any],
    ctx: BuildContext,
) -> Iterator[tuple[Service, Container]]:
    """Create the service of ``body`` (Docker SDK arguments: image, command, name, ...) and wait until its
    task's container runs on the node; removed after, waiting until its containers are gone from the node."""
    name = body["name"]

    def create(rid: int) -> tuple[Service, Container]:
        made = manager.services.create(**body)
        ctx.ledger.update(rid, service=made.id)
        try:
            return made, daemon.containers.get(_running(made))
        except BaseException:  # a task that never ran: its service goes now, not at the next cleanup
            remove_service(manager_at, socket, name)
            ctx.ledger.removed(rid)
            raise

    with tracked(
        ctx.ledger, "swarm-service", name, create, lambda _: remove_service(manager_at, socket, name),
        manager=manager_at, socket=socket,
    ) as made:  # fmt: skip
        yield made


def remove_service(manager_at: str, socket: str, name: str) -> None:
    selector = {"label": f"com.docker.swarm.service.name={name}"}
    with contextlib.closing(client(manager_at)) as manager, contextlib.closing(client(socket)) as daemon:
        with contextlib.suppress(NotFound):
            manager.services.get(name).remove()
        _wait(lambda: not _containers(daemon, selector), f"service {name}'s containers to go")


def _containers(daemon: docker.DockerClient, selector: dict[str, str]) -> list[Container]:
    """The node's containers that match, as listed (sparse: without inspecting each, which fails with
    NotFound for one the node removes meanwhile, as it does a removed service's)."""
    return list(daemon.containers.list(all=True, filters=selector, sparse=True))


def _running(made: Service) -> str:
    """The id of the task's container once it runs; why not, if the task ended first."""
    deadline = time.monotonic() + TASK_LIMIT_S
    while True:
        tasks = made.tasks()
        status = tasks[0]["Status"] if tasks else {}
        state = status.get("State", "new")
        if state == "running":
            return str(status["ContainerStatus"]["ContainerID"])
        if state in ENDED or time.monotonic() > deadline:
            said = status.get("Err") or status.get("Message") or "no message"
            raise LayerbenchError(f"service {made.name}'s task did not start ({state}): {said}")
        time.sleep(0.5)


def _wait(done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + GONE_LIMIT_S
    while not done():
        if time.monotonic() > deadline:
            raise LayerbenchError(f"Docker Swarm: gave up waiting for {what} after {GONE_LIMIT_S:.0f} s")
        time.sleep(0.2)


# Removers for `cleanup`, from the ledger's rows (newest first: services, volumes, the image, the run).
def reclaim_service(res: Resource, runner: Any) -> None:
    remove_service(res.detail["manager"], res.detail["socket"], res.ident)


def reclaim_run(res: Resource, runner: Any) -> None:
    """After a kill the whole run goes: every engine's objects, by the run's label (a row written before
    scopes names the run itself)."""
    run = {"label": f"{RUN_LABEL}={res.detail.get('run', res.ident)}"}
    remove_labelled(res.detail["manager"], res.detail["socket"], run)


def probe(ask: HostProbe) -> SwarmCaps:
    """The swarm of the manager (``manager_url()``) as the rules see it: its nodes."""
    return SwarmCaps(swarm_nodes(manager_url()))


def doctor_rows(urls: Sequence[str]) -> list[tuple[str, bool, str]]:
    """`doctor`'s rows for the swarm of --swarm-manager, asked only where one is named."""
    manager = manager_url()
    if not manager:
        return [("swarm", False, f"not probed: pass --swarm-manager URL (or set {MANAGER_ENV})")]
    return describe(manager)
