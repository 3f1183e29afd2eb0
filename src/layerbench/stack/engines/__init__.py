"""The engine seam: what runs a workload (natively, in Docker, in Podman, in a VM) behind one interface.

An engine type (``EngineType``) is registered here by its spec name
(``engine: podman:overlay`` → ``ENGINES["podman"]``). Its ``start`` brings up
the running engine on the stack's filesystem (a private daemon, or nothing
natively) as a context manager whose exit tears it down; the running engine
(``Engine``) provides the image, places a workload at a placement with its
limits applied and read back, and hands a ``Target`` that runs commands there.
``failure`` classifies a command's failure that is the engine's and not the
tool's; ``removers`` clean up, from the ledger, what a dead run of this engine
left; ``probe`` learns what the engine's feasibility rule reads of this host
(spec/engines/<engine>: its row, its rule and the type of what its probe
learns, which spec/ reads without importing the stack); ``doctor`` gives
`doctor`'s rows of an engine on other machines. Adding an engine is one module
here and one line in ``ENGINES``, and its module in spec/engines/ with its
line in that registry. docs/architecture.md lists the files.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from layerbench.proc import Runner
from layerbench.spec.models import EngineSpec
from layerbench.spec.traits import traits
from layerbench.stack import docker_api, dockerd
from layerbench.stack.engines import container, docker, docker_host, native, podman, swarm, vm, vm_docker
from layerbench.stack.engines.docker_host import host_api
from layerbench.stack.engines.swarm import swarm_api
from layerbench.stack.engines.vm import guest
from layerbench.stack.ledger import Resource
from layerbench.stack.protocols import ContainerEngine, Engine, HostProbe
from layerbench.stack.target import BuildContext, Mount

__all__ = [
    "ENGINES",
    "ContainerEngine",
    "Engine",
    "EngineType",
    "HostProbe",
    "api_errors",
    "describe_daemons",
    "doctor_rows",
    "engine_type",
    "failure_category",
    "local_nodes",
    "probe_engines",
    "removers",
]

Remover = Callable[[Resource, Runner], None]
# `doctor`'s rows of an engine on other machines, given the daemons named by URL: (what, usable, note).
DoctorRows = Callable[[Sequence[str]], list[tuple[str, bool, str]]]


def _on_call(module: str, name: str) -> Callable[..., Any]:
    """``module.name``, imported when first called: the Kubernetes client took 0.1-0.45 s of every run's
    start here (python -X importtime, warm and cold), and most runs never reach a cluster."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    return call


_KUBE = "layerbench.stack.engines.kubernetes"


@dataclass(frozen=True)
class EngineType:
    kind: str
    start: Callable[[Mount, EngineSpec, BuildContext], AbstractContextManager[Engine]]
    failure: Callable[[int | None, str], str | None] = lambda rc, stderr: None
    removers: Mapping[str, Remover] = field(default_factory=dict)
    # What its API raises when the engine fails under a stack being built (its daemon gone or broken):
    # the run loop counts such a failure as the engine's (engine-error), not the setup's.
    errors: tuple[type[BaseException], ...] = ()
    # An engine that reaches a daemon by URL: the daemon's name as shown, and its own account of itself
    # (driver, backing filesystem, kernel...), which a run records beside this host's.
    describe_daemon: Callable[[str], tuple[str, dict[str, Any]]] | None = None
    # What its feasibility rule reads of this host (spec/engines/<engine>'s result type): run for every
    # experiment where its row names no ``probe``, else only where a cell makes the probe learn that.
    probe: Callable[[HostProbe], object] | None = None
    doctor: DoctorRows | None = None
    # Which of its cells' nodes are this very machine (node name or daemon URL as shown → local): parallel
    # parts there share its CPUs (`run --parallel-nodes` warns).
    local_nodes: Callable[[Sequence[EngineSpec]], dict[str, bool]] | None = None


def _kube_rows(urls: Sequence[str]) -> list[tuple[str, bool, str]]:
    """The cluster of $KUBECONFIG, asked only where one is named (the Kubernetes client is imported then)."""
    config = os.environ.get("KUBECONFIG")
    if not config:
        return [("cluster", False, "not probed: pass --kubeconfig FILE (or set KUBECONFIG)")]
    rows: list[tuple[str, bool, str]] = _on_call(f"{_KUBE}.kube_api", "describe")(config)
    return rows


ENGINES: dict[str, EngineType] = {
    "native": EngineType("native", native.start),
    "docker": EngineType(
        "docker",
        docker.start,
        docker.failure,
        {"dockerd": docker.reclaim, **container.REMOVERS},
        dockerd.API_ERRORS,
        probe=docker.probe,
    ),
    "podman": EngineType(
        "podman",
        podman.start,
        podman.failure,
        {"podman": podman.reclaim, **container.REMOVERS},
        dockerd.API_ERRORS,
        probe=podman.probe,
    ),
    "vm": EngineType("vm", vm.start, vm.failure, {"vm": guest.reclaim}, probe=vm.probe),
    "vm+docker": EngineType("vm+docker", vm_docker.start, vm_docker.failure),  # its guest is the vm engine's
    "kubernetes": EngineType(
        "kubernetes",
        _on_call(_KUBE, "start"),
        removers={
            "k8s-namespace": _on_call(f"{_KUBE}.kube_api", "reclaim"),
            "k8s-object": _on_call(f"{_KUBE}.kube_api", "reclaim_object"),
            "k8s-image": _on_call(f"{_KUBE}.kube_api", "reclaim_image"),
        },
        probe=_on_call(f"{_KUBE}.kube_api", "probe"),
        doctor=_kube_rows,
        local_nodes=_on_call(f"{_KUBE}.kube_api", "local_nodes"),
    ),
    "swarm": EngineType(
        "swarm",
        swarm.start,
        swarm.failure,
        removers={
            "swarm-run": swarm_api.reclaim_run,
            "swarm-service": swarm_api.reclaim_service,
            "swarm-volume": docker_api.reclaim_volume,
            "swarm-image": docker_api.reclaim_image,
        },
        errors=dockerd.API_ERRORS,
        probe=swarm_api.probe,
        doctor=swarm_api.doctor_rows,
    ),
    # A daemon layerbench did not start: only what the run's rows name, or its label marks, is removed there.
    "docker-host": EngineType(
        "docker-host",
        docker_host.start,
        docker_host.failure,
        removers={
            "docker-host-run": host_api.reclaim_run,
            "docker-host-container": host_api.reclaim_container,
            "docker-host-volume": docker_api.reclaim_volume,  # its row's socket is the daemon's URL
            "docker-host-image": docker_api.reclaim_image,
        },
        errors=dockerd.API_ERRORS,
        describe_daemon=lambda url: (host_api.shown(url), host_api.describe_facts(url)),
        probe=host_api.probe,
        doctor=host_api.doctor_rows,
        local_nodes=host_api.local_nodes,
    ),
}


def engine_type(kind: str) -> EngineType:
    return ENGINES[kind]


def failure_category(rc: int | None, stderr: str) -> str | None:
    """The engine's failure class for a command that failed (e.g. "engine-error"), or None: the tool's."""
    for t in ENGINES.values():
        found = t.failure(rc, stderr)
        if found:
            return found
    return None


def removers() -> dict[str, Remover]:
    """Ledger kind → remover, for what each engine records (its daemon)."""
    return {kind: remover for t in ENGINES.values() for kind, remover in t.removers.items()}


def api_errors() -> tuple[type[BaseException], ...]:
    """What the engines' APIs raise when an engine fails under a stack (each class once)."""
    return tuple(dict.fromkeys(e for t in ENGINES.values() for e in t.errors))


def describe_daemons(urls: list[str]) -> dict[str, dict[str, Any]]:
    """Daemons named by URL, each as its engine describes it (a daemon that does not answer: why)."""
    return {
        name: facts
        for t in ENGINES.values()
        if t.describe_daemon is not None
        for name, facts in (t.describe_daemon(url) for url in urls)
    }


def probe_engines(ask: HostProbe) -> dict[str, object]:
    """Each engine's probe result, by its name (``HostCaps.engines``): an engine whose row names what its
    probe learns is probed only where a cell asks that (a guest boots, a cluster is reached)."""
    found: dict[str, object] = {}
    for kind, t in ENGINES.items():
        learns = traits(kind).probe
        if t.probe is not None and (learns is None or learns in ask.probes):
            found[kind] = t.probe(ask)
    return found


def doctor_rows(urls: Sequence[str]) -> list[tuple[str, str, bool, str]]:
    """`doctor`'s rows of the engines on other machines: (engine, what, usable, note), each asked only where
    named (its cluster's config, its manager, the daemons' URLs)."""
    return [(kind, *row) for kind, t in ENGINES.items() if t.doctor is not None for row in t.doctor(urls)]


def local_nodes(specs: Sequence[EngineSpec]) -> dict[str, bool]:
    """Which nodes of the cells' engines (``specs``, each node's) are this very machine, each engine asked only
    where a cell names it (its cluster reached, its daemons asked)."""
    found: dict[str, bool] = {}
    for kind, t in ENGINES.items():
        mine = [e for e in specs if e.kind == kind]
        if t.local_nodes is not None and mine:
            found |= t.local_nodes(mine)
    return found
