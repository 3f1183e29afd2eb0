"""docker: a private dockerd per storage driver on the filesystem under test; what its cells need here."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from layerbench.spec.engines.row import EngineTraits
from layerbench.spec.engines.runtimes import DEFAULT_RUNTIME, RUNTIMES
from layerbench.spec.feasibility import HostCaps

if TYPE_CHECKING:
    from layerbench.spec.models import StackSpec

KIND = "docker"
# Docker releases that dropped a storage driver: (driver, first major without it).
DRIVERS_REMOVED = (("aufs", 24), ("devicemapper", 25))


@dataclass(frozen=True)
class DockerCaps:
    """What the host probe learned for Docker (stack/engines/docker.py probes it on every run: it is cheap)."""

    drivers: frozenset[str] = frozenset()  # storage drivers this host could run (its probe's docker_drivers)
    dockerd_major: int | None = None  # dockerd's major version (Docker 24 dropped aufs, 25 devicemapper)
    # OCI runtimes (engines/runtimes.py), probed only for the experiment's cells that name one, Podman's too:
    # name -> None where it ran a container here, else why not, in its own words.
    runtimes: dict[str, str | None] = field(default_factory=dict)


def of(caps: HostCaps) -> DockerCaps:
    """Docker's part of the host's snapshot (an empty one where the probe did not run)."""
    found = caps.engines.get(KIND)
    return found if isinstance(found, DockerCaps) else DockerCaps()


def ready(s: StackSpec, caps: HostCaps) -> str | None:
    missing = [b for b in ENGINE.tools if b not in caps.binaries]
    if missing:
        return f"Docker engine binaries missing: {', '.join(missing)} (apt-get install docker.io)"
    driver = s.engine.driver or "overlay2"
    if driver not in of(caps).drivers:
        return why_no_driver(driver, caps)
    dm = _devicemapper_ready(s, caps) if driver == "devicemapper" else None
    return dm or runtime_ready(s, caps) or _seccomp_ready(s)


def _seccomp_ready(s: StackSpec) -> str | None:
    """The daemon's seccomp profile is a JSON file that dockerd can read (it refuses to start otherwise)."""
    if s.engine.seccomp is None:
        return None
    try:
        json.loads(Path(s.engine.seccomp).read_text())
    except (OSError, ValueError) as exc:
        return f"seccomp profile {s.engine.seccomp}: not a readable JSON file ({exc})"
    return None


def runtime_ready(s: StackSpec, caps: HostCaps) -> str | None:
    """The cell's OCI runtime ran a probe container here (stack/runtimes.py), or why not."""
    name = s.engine.runtime
    if name is None:
        return None
    if s.server is not None and RUNTIMES[name].servers:
        return f"runtime {name}: {RUNTIMES[name].servers}"
    why = of(caps).runtimes.get(name, "not probed")
    return f"runtime {name}: {why}" if why else None


def _devicemapper_ready(s: StackSpec, caps: HostCaps) -> str | None:
    """What the devicemapper driver needs beyond the kernel's device-mapper (in docker_drivers)."""
    if "dmsetup" not in caps.binaries:
        return "the devicemapper driver's devices are removed with dmsetup, which is missing (apt-get install dmsetup)"
    if s.engine.mode != "direct-lvm":
        return None
    if not caps.loop:
        return "direct-lvm's thin pool sits on a loop device, and this host has no loop devices"
    missing = [b for b in ("lvcreate", "thin_check") if b not in caps.binaries]
    if missing:
        return (
            f"direct-lvm builds an LVM thin pool; {', '.join(missing)} missing "
            "(apt-get install lvm2 thin-provisioning-tools)"
        )
    return None


def why_no_driver(driver: str, caps: HostCaps) -> str:
    """Why a storage driver (Docker's or Podman's) is not among those this host could run."""
    major = of(caps).dockerd_major
    for gone, since in DRIVERS_REMOVED:
        if driver == gone and major is not None and major >= since:
            return f"dockerd {major}.x no longer has the {driver} storage driver (Docker {since} removed it)"
    if driver == "devicemapper" and caps.device_mapper and not caps.dm_thin:
        return "the devicemapper driver needs device-mapper's thin pool (dm-thin-pool), which this kernel lacks"
    reasons = {
        "devicemapper": "the devicemapper driver needs device-mapper, which this kernel lacks",
        "aufs": "the aufs driver needs aufs, which this kernel lacks (it was never in mainline)",
        "fuse-overlayfs": "fuse-overlayfs needs /dev/fuse and the fuse-overlayfs binary",
        "overlay2": "overlay2 needs overlayfs in the kernel",
        "overlay": "Podman's overlay driver needs overlayfs in the kernel",
        "btrfs": "the btrfs driver needs btrfs in the kernel",
    }
    return reasons.get(driver, f"storage driver {driver} is not available on this host")


ENGINE = EngineTraits(
    "Docker",
    drivers=("overlay2", "btrfs", "vfs", "fuse-overlayfs", "devicemapper", "aufs"),
    images=True,
    tunings=True,
    runtimes=True,
    seccomp=True,
    clients=True,
    export_clients=True,
    rule=ready,
    tools=("dockerd", "containerd", RUNTIMES[DEFAULT_RUNTIME].binary),
    binary="docker",
    version=("dockerd", "--version"),
    processes=("containerd-shim", "dockerd", "containerd"),
)
