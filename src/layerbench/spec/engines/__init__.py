"""The engines' registry, as the spec reads it: one module per engine, each holding its traits row, its own
feasibility rule and the result of what its host probe learns.

fio's generic code reads its I/O engines' flags (``FIO_DISKLESSIO``, ``FIO_SYNCIO``, ...) instead of their
names; here the rules, the models, the matrix, the session, advice, findings and checks read a row of
``ENGINES`` (an ``EngineTraits``), and the host's snapshot keeps each engine's probe result under its name
(``HostCaps.engines``), which only that engine's module reads. Nothing outside this package and stack/engines/
writes an engine's name (``tests/unit/test_seam.py`` fails on one). The stack side of each engine (start, its
host probe) is stack/engines/<engine>. A new engine is one module here, one entry below, and its package there.
"""

from __future__ import annotations

from layerbench.spec.engines import docker, docker_host, kubernetes, native, podman, swarm, vm, vm_docker
from layerbench.spec.engines.row import EngineTraits
from layerbench.spec.engines.runtimes import DEFAULT_RUNTIME, RUNTIMES
from layerbench.spec.feasibility import HostCaps

# An explicit list, in the order the spec's schema and `doctor` show them (no discovery by import).
ENGINES: dict[str, EngineTraits] = {
    m.KIND: m.ENGINE for m in (native, docker, podman, vm, vm_docker, kubernetes, swarm, docker_host)
}
# The engine that is the host itself (no layer): a stack's default, and what a native workload's target reports.
HOST_ENGINE = native.KIND
# The engine whose API a daemon layerbench reaches speaks (Podman's service speaks it too), and whose command
# line an error of that API names.
API_ENGINE = docker.KIND
# The command line an error of that API names, as the call it stands for.
API_CLI = docker.ENGINE.binary or docker.KIND
# The OCI runtime a container engine runs without one named, as its program is called.
DEFAULT_RUNTIME_BINARY = RUNTIMES[DEFAULT_RUNTIME].binary


def traits(kind: str) -> EngineTraits:
    """The traits of an engine kind (``EngineSpec.kind``)."""
    return ENGINES[kind]


def guest_accel(caps: HostCaps) -> str | None:
    """The accelerator a probe guest ran under here ("kvm", "tcg"), or None where none booted."""
    return vm.of(caps).accel
