"""podman: a private `podman system service` per storage driver, reached through its Docker-compatible API."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from layerbench.spec.engines import docker
from layerbench.spec.engines.row import EngineTraits
from layerbench.spec.engines.runtimes import DEFAULT_RUNTIME, RUNTIMES
from layerbench.spec.feasibility import HostCaps

if TYPE_CHECKING:
    from layerbench.spec.models import StackSpec

KIND = "podman"


@dataclass(frozen=True)
class PodmanCaps:
    """What the host probe learned for Podman (its OCI runtimes are Docker's: ``docker.of(caps).runtimes``)."""

    drivers: frozenset[str] = frozenset()  # Podman's storage drivers this host could run (overlay, vfs, btrfs)


def of(caps: HostCaps) -> PodmanCaps:
    found = caps.engines.get(KIND)
    return found if isinstance(found, PodmanCaps) else PodmanCaps()


def ready(s: StackSpec, caps: HostCaps) -> str | None:
    missing = [b for b in ENGINE.tools if b not in caps.binaries]
    if missing:
        return f"Podman binaries missing: {', '.join(missing)} (apt-get install podman)"
    driver = s.engine.driver or "overlay"
    if driver not in of(caps).drivers:
        return docker.why_no_driver(driver, caps)
    if s.server is not None:
        # Servers are reached on a private bridge network: Podman's would need CNI bridge, IPAM and
        # firewall state of its own, which layerbench does not build (yet).
        return "database servers under Podman are not supported yet (no private network for them): use docker or native"
    return docker.runtime_ready(s, caps)


# Podman calls overlay "overlay".
ENGINE = EngineTraits(
    "Podman",
    drivers=("overlay", "vfs", "btrfs"),
    images=True,
    tunings=True,
    runtimes=True,
    clients=True,
    rule=ready,
    tools=("podman", "conmon", RUNTIMES[DEFAULT_RUNTIME].binary),
    binary="podman",
    version=("podman", "--version"),
    processes=("conmon", "podman"),
)
