"""docker-host: a container on a Docker daemon named by URL, which layerbench did not start."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from layerbench.spec.engines.row import EngineTraits
from layerbench.spec.feasibility import HostCaps

if TYPE_CHECKING:
    from layerbench.spec.models import StackSpec

KIND = "docker-host"


@dataclass(frozen=True)
class DaemonCaps:
    """Docker daemons named by URL (engines/docker_host/host_api.py), probed only for the experiment's cells."""

    # URL -> None where a daemon answers there, else why not (an absent URL was not probed).
    answers: dict[str, str | None] = field(default_factory=dict)


def of(caps: HostCaps) -> DaemonCaps:
    found = caps.engines.get(KIND)
    return found if isinstance(found, DaemonCaps) else DaemonCaps()


def ready(s: StackSpec, caps: HostCaps) -> str | None:
    """A daemon that answers at its URL (docker_host/host_api.py), with what layerbench can ask of it from here."""
    url = s.engine.node or ""
    why = of(caps).answers.get(s.engine.daemon or "", "not probed")
    if why is not None:
        return f"no Docker daemon answers at {url}: {why}"
    if s.limits.read_bps or s.limits.write_bps:
        return (
            "block-I/O limits name a device of the daemon's machine, which layerbench cannot see from here: "
            "drop read_bps/write_bps (cpus, memory and cpuset go to the daemon as they are)"
        )
    if s.server is not None:
        return (
            "database servers on a Docker host are not supported yet: use engine docker, swarm or kubernetes for them"
        )
    return None


# A daemon layerbench did not start, named by URL: its storage is its own, on its machine.
ENGINE = EngineTraits(
    "a Docker host",
    placements=frozenset({"writable-layer", "volume", "tmpfs"}),
    node="the daemon's URL, as DOCKER_HOST takes it",
    daemon_url=True,
    builds_storage=False,
    clients=True,  # by a unix:// socket, each container's process found here (spec/rules.py)
    tunings=True,
    unprofiled="perf records this host, and a Docker host's containers run where its daemon is",
    probe="daemon-url",
    rule=ready,
)
