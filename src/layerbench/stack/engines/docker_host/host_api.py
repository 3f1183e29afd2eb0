"""A plain Docker daemon named by URL (DOCKER_HOST's forms): what layerbench asks of it, and what it leaves.

The daemon is the user's: layerbench did not start it and never stops or reconfigures it. It only
adds, for a run, the tools image (loaded from a docker-archive unless the daemon has it), a container
per placement and a named volume, each labelled ``layerbench.run=<run id>`` and recorded in the ledger
before it exists, with the daemon's URL (``socket``, as the Swarm engine's rows name theirs), so
``cleanup`` after a SIGKILL removes them without options; and it removes nothing else: only what
carries the run's label or has the run's ledger row.

What the storage is comes from the daemon itself (``info()``: its storage driver, the filesystem that
driver sits on, its data-root, its kernel), since it may be another machine's.
"""

from __future__ import annotations

import contextlib
import platform
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import docker
from docker.errors import NotFound
from docker.models.containers import Container

from layerbench.errors import PrerequisiteError
from layerbench.spec.engines.docker_host import DaemonCaps
from layerbench.spec.models import EngineSpec
from layerbench.spec.traits import traits
from layerbench.stack import docker_api
from layerbench.stack.dockerd import API_ERRORS
from layerbench.stack.ledger import Resource, tracked
from layerbench.stack.protocols import HostProbe
from layerbench.stack.target import BuildContext

RUN_LABEL = docker_api.RUN_LABEL
SCOPE_LABEL = docker_api.SCOPE_LABEL
# What a trial records of the daemon (its `docker info`), under names of our own.
INFO_KEYS = {
    "Name": "name",
    "ServerVersion": "server_version",
    "Driver": "driver",
    "DockerRootDir": "data_root",
    "KernelVersion": "kernel",
    "OperatingSystem": "os",
    "NCPU": "cpus",
    "MemTotal": "memory_bytes",
}
PROBE_TIMEOUT_S = 10
HINT = "start the daemon there, or fix the URL (DOCKER_HOST's forms: unix:///PATH, tcp://HOST:PORT, ssh://USER@HOST)"


shown = docker_api.shown  # a daemon's URL without its TLS files, as messages and records show it


def connect(url: str) -> docker.DockerClient:
    """The daemon at ``url`` (its TLS files, if any, in the fragment: EngineSpec.daemon), once it answers."""
    try:
        daemon = docker_api.client(url)  # the SDK asks the daemon its API version here
        daemon.ping()
    except API_ERRORS as exc:
        raise PrerequisiteError(f"no Docker daemon answers at {docker_api.shown(url)}: {why(exc)}", hint=HINT) from exc
    return daemon


def answers(url: str) -> str | None:
    """None where a daemon answers at ``url``, else why not (the feasibility rules' probe, which does not wait
    on an address that never answers as long as a trial's command would)."""
    try:
        with contextlib.closing(docker_api.client(url, PROBE_TIMEOUT_S)) as daemon:
            daemon.ping()
    except API_ERRORS as exc:
        return why(exc)
    except PrerequisiteError as exc:  # a TLS file that is not there
        return str(exc)
    return None


def why(exc: BaseException) -> str:
    """The system's reason inside the SDK's and urllib3's wrapping ("Connection refused"), else its first line."""
    text = str(exc)
    tls = re.search(r"\[SSL: ([A-Z0-9_]+)\] ([^(\"')]+)", text) or re.search(r"\[SSL\] ([^(\"')]+)", text)
    if tls:
        said = tls.group(0).strip()
        if "CERTIFICATE_VERIFY_FAILED" in said:
            return f"TLS: the daemon's certificate does not verify against tls.ca ({said})"
        return f"TLS: the daemon refused this client or its certificate ({said}): check tls.cert and tls.key"
    found = re.search(r"\[Errno -?\d+\] ([^\"')]+)", text) or re.search(r"\w+Error\(-?\d+, '([^']+)'\)", text)
    return found.group(1).strip() if found else docker_api.first_line(exc)


def facts(info: dict[str, Any]) -> dict[str, Any]:
    """The daemon's account of itself, as a trial records it: where and on what its storage is."""
    found = {ours: info[theirs] for theirs, ours in INFO_KEYS.items() if theirs in info}
    status = dict(tuple(pair) for pair in info.get("DriverStatus") or [] if len(pair) == 2)
    if "Backing Filesystem" in status:
        found["backing_filesystem"] = status["Backing Filesystem"]
    found["driver_status"] = info.get("DriverStatus")
    return found


def describe_facts(url: str) -> dict[str, Any]:
    """The daemon's facts (``facts``), or why it could not be asked."""
    try:
        with contextlib.closing(connect(url)) as daemon:
            return facts(daemon.info())
    except (PrerequisiteError, *API_ERRORS) as exc:
        return {"unknown": str(exc) if isinstance(exc, PrerequisiteError) else why(exc)}


def on_this_machine(url: str) -> bool:
    """Whether the daemon at ``url`` runs on this machine, for the warning that parallel runs there contend:
    a unix socket is; another daemon is when it answers with this host's name (a guess: names can repeat)."""
    if url.startswith("unix://"):
        return True
    try:
        with contextlib.closing(connect(url)) as daemon:
            return bool(daemon.info().get("Name") == platform.node())
    except (PrerequisiteError, *API_ERRORS):
        return False


def describe(url: str) -> tuple[bool, str]:
    """`doctor`'s row for one daemon: (usable, note)."""
    try:
        with contextlib.closing(connect(url)) as daemon:
            found = facts(daemon.info())
    except (PrerequisiteError, *API_ERRORS) as exc:
        return False, str(exc) if isinstance(exc, PrerequisiteError) else why(exc)
    on = found.get("backing_filesystem", "?")
    return True, f"Docker {found.get('server_version', '?')}, {found.get('driver', '?')} on {on}"


@contextmanager
def run_scope(url: str, ctx: BuildContext) -> Iterator[dict[str, str]]:
    """The engine's row on this daemon, recorded first and removed last: whatever still carries its scope
    there (containers, volumes) goes with it. Yields the labels its objects carry."""
    labels = docker_api.scope_labels(ctx.run_id)
    scope = labels[SCOPE_LABEL]
    with tracked(ctx.ledger, "docker-host-run", scope, lambda rid: None,
                 lambda _: remove_labelled(url, {"label": f"{SCOPE_LABEL}={scope}"}),
                 socket=url, run=ctx.run_id):  # fmt: skip
        yield labels


def remove_labelled(url: str, selector: dict[str, str]) -> None:
    """Every container the selector finds on the daemon (with its anonymous volumes), then every volume."""
    with contextlib.closing(docker_api.client(url)) as daemon:
        for container in daemon.containers.list(all=True, filters=selector, sparse=True):
            with contextlib.suppress(NotFound):
                container.remove(force=True, v=True)
        for volume in daemon.volumes.list(filters=selector):
            with contextlib.suppress(NotFound):
                volume.remove(force=True)


@contextmanager
def volume(
    daemon: docker.DockerClient, url: str, name: str, labels: dict[str, str], ctx: BuildContext
) -> Iterator[str]:
    """A named volume of the daemon's local driver: under its data-root, on whatever filesystem that is."""

    def create(rid: int) -> str:
        return str(daemon.volumes.create(name, driver="local", labels=labels).name)

    with tracked(
        ctx.ledger, "docker-host-volume", name, create, lambda v: docker_api.remove_volume(url, v), socket=url
    ):
        yield name


@contextmanager
def container(
    daemon: docker.DockerClient, url: str, name: str, kwargs: dict[str, Any], labels: dict[str, str], ctx: BuildContext
) -> Iterator[Container]:
    """A container named ``name`` of the Docker SDK's ``kwargs`` (image, command, mounts, limits), labelled
    with the run, started; removed after with its anonymous volumes."""

    def create(rid: int) -> Container:
        made = daemon.containers.create(name=name, labels=labels, **kwargs)
        ctx.ledger.update(rid, container=made.id)
        return made

    with tracked(ctx.ledger, "docker-host-container", name, create, lambda _: remove_container(url, name),
                 socket=url) as made:  # fmt: skip
        # Started here, not in create: a container that fails to start exists all the same, and goes on the
        # way out.
        try:
            made.start()
        except API_ERRORS as exc:
            raise PrerequisiteError(f"the container on {docker_api.shown(url)} did not start: {exc}") from exc
        yield made


def remove_container(url: str, name: str) -> None:
    with contextlib.closing(docker_api.client(url)) as daemon, contextlib.suppress(NotFound):
        daemon.containers.get(name).remove(force=True, v=True)


# Removers for `cleanup`, from the ledger's rows (newest first: containers, volumes, the image, the run).
def reclaim_container(res: Resource, runner: Any) -> None:
    remove_container(res.detail["socket"], res.ident)


def reclaim_run(res: Resource, runner: Any) -> None:
    """After a kill the whole run goes: every engine's objects, by the run's label (a row written before
    scopes names the run itself)."""
    remove_labelled(res.detail["socket"], {"label": f"{RUN_LABEL}={res.detail.get('run', res.ident)}"})


def probe(ask: HostProbe) -> DaemonCaps:
    """Whether a daemon answers at each URL the cells name (with its TLS files: ``EngineSpec.daemon``)."""
    urls = sorted({e.daemon for e in ask.engines if traits(e.kind).daemon_url and e.daemon})
    return DaemonCaps({url: answers(url) for url in urls})


def doctor_rows(urls: Sequence[str]) -> list[tuple[str, bool, str]]:
    """`doctor`'s row for each daemon named with --docker-host."""
    return [(url, *describe(url)) for url in urls]


def local_nodes(specs: Sequence[EngineSpec]) -> dict[str, bool]:
    """Which daemons the cells name are on this very machine (daemon as shown → local)."""
    return {shown(url): on_this_machine(url) for url in sorted({e.daemon for e in specs if e.daemon})}
