"""The Docker engine: a private dockerd per storage driver (stack/dockerd.py), its API for the rest."""

from __future__ import annotations

import contextlib
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from layerbench.errors import LayerbenchError, ToolError
from layerbench.proc import Runner
from layerbench.spec.engines.docker import DRIVERS_REMOVED, DockerCaps
from layerbench.spec.models import EngineSpec
from layerbench.stack import devmapper, dockerd, runtimes
from layerbench.stack.cgroups import remove_parent
from layerbench.stack.engines.container import ApiEngine
from layerbench.stack.ledger import Resource
from layerbench.stack.protocols import HostProbe
from layerbench.stack.target import BuildContext, Mount

# What the Docker API's exec answers when the container or its daemon is gone (stack/placement.py).
EXEC_FAILED_RC = 125


@contextmanager
def start(mount: Mount, spec: EngineSpec, ctx: BuildContext) -> Iterator[ApiEngine]:
    """A private dockerd on ``mount``; for devicemapper's direct-lvm, on a thin pool built for it first
    (and removed after the daemon); with the spec's OCI runtime as every container's."""
    with contextlib.ExitStack() as stack:
        pool = stack.enter_context(devmapper.thin_pool(mount, ctx)) if spec.mode == "direct-lvm" else None
        opts = tuple(devmapper.storage_opts(spec.mode, pool))
        config = runtimes.daemon_config(spec.runtime) if spec.runtime else {}
        if spec.seccomp:
            config["seccomp-profile"] = str(Path(spec.seccomp).resolve())
        daemon = stack.enter_context(dockerd.private_dockerd(mount, spec.driver or "overlay2", ctx, opts, config))
        daemon.info["runtime"] = runtimes.facts(spec.runtime or "runc", ctx.runner)
        yield ApiEngine(daemon)


def failure(rc: int | None, stderr: str) -> str | None:
    """An exec the daemon could not run: the stack must be rebuilt, the tool is not to blame."""
    return "engine-error" if rc == EXEC_FAILED_RC and "docker exec" in stderr else None


def reclaim(res: Resource, runner: Runner) -> None:
    """A dead run's daemon (dockerd, or Podman's service: both are swept by their two roots and cgroup)."""
    exec_root = Path(res.ident)
    data_root = Path(res.detail.get("data_root", exec_root / "absent"))
    left = dockerd.sweep(exec_root, data_root, runner)
    if left:
        raise LayerbenchError(f"{res.kind} {exec_root.name} left {', '.join(left)}")
    shutil.rmtree(exec_root, ignore_errors=True)
    shutil.rmtree(data_root, ignore_errors=True)
    remove_parent(dockerd.cgroup_parent(exec_root))
    if res.detail.get("log"):
        Path(res.detail["log"]).unlink(missing_ok=True)


def probe(ask: HostProbe) -> DockerCaps:
    """The storage drivers this host could run, dockerd's version, and whether each OCI runtime the cells name
    (Podman's too: the runtimes are Docker's registry) runs a container here."""
    host = ask.host
    major = _dockerd_major(ask.runner, host.binaries)
    drivers = docker_drivers(host.filesystems, host.binaries, host.fuse, host.device_mapper and host.dm_thin)
    names = sorted({e.runtime for e in ask.engines if e.runtime})
    return DockerCaps(
        drivers=_drop_removed(drivers, major, ask.notes),
        dockerd_major=major,
        runtimes={name: runtimes.probe(name, ask.runner) for name in names},
    )


def docker_drivers(filesystems: frozenset[str], binaries: frozenset[str], fuse: bool, dm: bool) -> frozenset[str]:
    """The storage drivers whose kernel and tool needs this host meets (``dm``: device-mapper and its thin pool)."""
    needs = {
        "overlay2": "overlay" in filesystems,
        "btrfs": "btrfs" in filesystems,
        "vfs": "dockerd" in binaries,
        "fuse-overlayfs": fuse and "fuse-overlayfs" in binaries,
        "devicemapper": dm,
        "aufs": "aufs" in filesystems,
    }
    return frozenset(driver for driver, met in needs.items() if met)


def _drop_removed(drivers: frozenset[str], major: int | None, notes: list[str]) -> frozenset[str]:
    if major is None:
        return drivers
    gone = {d for d, since in DRIVERS_REMOVED if d in drivers and major >= since}
    notes.extend(f"dockerd {major}.x no longer has the {d} storage driver" for d in sorted(gone))
    return drivers - gone


def _dockerd_major(runner: Runner, binaries: frozenset[str]) -> int | None:
    if "dockerd" not in binaries:
        return None
    try:
        out = runner(["dockerd", "--version"], timeout=30).stdout
    except ToolError:  # a broken install: the engine layer reports it when it starts one
        return None
    found = re.search(r"version (\d+)\.", out)
    return int(found.group(1)) if found else None
