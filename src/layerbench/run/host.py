"""What the commands ask of this host: its capabilities, its description, cleanup, a block device, a run's lock.

The CLI comes here instead of reaching into stack/ module by module, so a
change inside the stack (a new engine, another probe) stops at this file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from layerbench import proc
from layerbench.profiling import perf
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.models import EngineSpec
from layerbench.stack import capabilities, cleanup, device, engines, environment, runlock
from layerbench.stack.cleanup import Action
from layerbench.stack.ledger import Ledger

DEFAULT_CACHE = capabilities.DEFAULT_CACHE


def caps(
    cache_dir: Path, probes: frozenset[str] = frozenset(), profiler: bool = False, images: tuple[str, ...] = ()
) -> HostCaps:
    """What this host supports (`doctor`, and every run's feasibility rules); with ``probes``, what the engines'
    probes learn beyond what they always do (``HOST_PROBES``: whether and how a VM runs here, a probe boot); with
    ``profiler``, whether perf records here; with ``images``, whether the container engines can have each (pull
    it, or load its file)."""
    found = perf.missing if profiler else None
    return capabilities.probe(proc.run, cache_dir, profiler=found, images=images, probes=probes)


def describe(cache_dir: Path) -> dict[str, Any]:
    """Kernel, CPU, memory and every tool's version, as a run records them."""
    return environment.describe_host(proc.run, cache_dir)


def describe_daemons(urls: list[str]) -> dict[str, Any]:
    """Docker hosts' own accounts (driver, backing filesystem, data-root, kernel, CPUs, memory), by URL,
    for a run of their cells to record beside this host's; a daemon that does not answer, with why."""
    return engines.describe_daemons(urls)


def changes_since(recorded: dict[str, Any], cache_dir: Path) -> list[str]:
    """What differs between a run's recorded host and this one now (a resume refuses if anything does)."""
    return environment.host_changes(recorded, describe(cache_dir))


def clean_up(state_dir: Path, dry_run: bool) -> list[Action]:
    """Remove (or with ``dry_run`` only list) what dead runs left, newest first."""
    ledger = Ledger(state_dir / "ledger.db", "cleanup")
    try:
        return cleanup.reclaim(ledger, state_dir, proc.run, dry_run=dry_run)
    finally:
        ledger.close()


def describe_block(dev_path: str) -> str:
    """A block device as its owner would recognise it, before agreeing to lose its data."""
    return device.describe_block(dev_path)


def run_is_live(state_dir: Path, run_id: str) -> bool:
    """A run's process still holds its lock (a run recorded as running without it died)."""
    return runlock.is_live(state_dir, run_id)


def on_this_machine(specs: list[EngineSpec]) -> dict[str, bool]:
    """Which nodes of the cells' engines (``specs``: each node's) are this very machine (node name or daemon
    URL → local), as each engine tells: a Kubernetes node by its boot id, a Docker host by its daemon's name."""
    return engines.local_nodes(specs)


def engine_rows(docker_hosts: list[str]) -> list[tuple[str, str, bool, str]]:
    """`doctor`'s rows of the engines on other machines: (engine, what, ok, note) for the Kubernetes cluster
    of $KUBECONFIG, the swarm of --swarm-manager and each Docker host named; each asked only where named."""
    return engines.doctor_rows(docker_hosts)


def ceph_rows(conf: str, pool: str, user: str, keyring: str | None) -> list[tuple[str, str, bool, str]]:
    """`doctor`'s rows of a Ceph cluster the user runs (--ceph-conf): asked as their user, nothing created."""
    from layerbench.spec.transports.rbd import OwnClusterSpec
    from layerbench.stack.remote.ceph import own

    spec = OwnClusterSpec(conf=conf, pool=pool, user=user, keyring=keyring)
    return own.doctor_rows(spec, proc.run)
