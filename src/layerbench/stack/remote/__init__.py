"""Remote devices: a storage host on its own network namespace, a transport's target and client
(layer.py puts them together as the stack's device layer).

The transports' registry, as the stack reads it: each transport's module (nbd.py, nvme_tcp.py, iscsi.py)
attaches its export here (``attached``), declares what its clients need of this host (``NEEDS``, features
of HostCaps.remote that its row in spec/transports/ names) and what cleanup removes of a dead run's
(``REMOVERS``, by ledger kind). A transport that builds a cluster (rbd: its package ceph/) owns its whole
build instead of attaching one backing device (``build``). The generic code (layer.py, the host probe,
cleanup) reads ``TRANSPORTS`` and never a transport's name. A new transport is its module here and one
entry below, with its module in spec/transports/ and its line in that registry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass

from layerbench.proc import Runner
from layerbench.spec.models import DeviceSpec, RemoteSpec, StackSpec
from layerbench.stack.ledger import Resource
from layerbench.stack.remote import ceph, iscsi, nbd, needs, nvme_tcp
from layerbench.stack.remote.host import StorageHost
from layerbench.stack.remote.needs import Loadable, Need
from layerbench.stack.target import BuildContext, Device

# The backing device, its storage host, the cell's remote block, the build's context → the device attached here.
Attach = Callable[[Device, StorageHost, RemoteSpec, BuildContext], AbstractContextManager[Device]]
Remover = Callable[[Resource, Runner], None]
# A transport that owns its whole build (a cluster: many backing devices and storage hosts): the device spec,
# the build's context → the device attached here.
Build = Callable[[DeviceSpec, BuildContext], AbstractContextManager[Device]]


@dataclass(frozen=True)
class TransportType:
    attach: Attach | None  # None where the transport owns its whole build (``build``)
    needs: Mapping[str, Need]  # feature of HostCaps.remote → what the host probe looks for
    removers: Mapping[str, Remover]  # ledger kind → what removes a dead run's
    build: Build | None = None  # instead of ``attach`` over one backing device and one storage host
    # Why the user has not allowed a cell of it (a fault on a cluster they run that `run --allow-faults-on` does
    # not name), given the fsids they named; None where nothing needs allowing.
    unallowed: Callable[[RemoteSpec, Sequence[str]], str | None] | None = None


# An explicit dict, keyed as spec/transports/ names each transport (no discovery by import).
TRANSPORTS: dict[str, TransportType] = {
    "nbd": TransportType(nbd.attached, nbd.NEEDS, nbd.REMOVERS),
    "nvme-tcp": TransportType(nvme_tcp.attached, nvme_tcp.NEEDS, nvme_tcp.REMOVERS),
    "iscsi": TransportType(iscsi.attached, iscsi.NEEDS, iscsi.REMOVERS),
    "rbd": TransportType(None, ceph.NEEDS, ceph.REMOVERS, ceph.built, ceph.unallowed),
}


def fault_refused(stack: StackSpec, faults_on: Sequence[str]) -> str | None:
    """Why the stack's device takes a fault the user has not allowed (`run --allow-faults-on`), or None."""
    remote = stack.device.remote
    unallowed = TRANSPORTS[remote.transport].unallowed if remote is not None else None
    return unallowed(remote, faults_on) if remote is not None and unallowed is not None else None


def probe(runner: Runner, loadable: Loadable) -> dict[str, str | None]:
    """HostCaps.remote: a storage host's needs, each transport's clients', and link shaping's."""
    return needs.probe(runner, loadable, {f: n for t in TRANSPORTS.values() for f, n in t.needs.items()})


def removers() -> dict[str, Remover]:
    """Ledger kind → remover, for what each transport's target and client record."""
    return {kind: remover for t in TRANSPORTS.values() for kind, remover in t.removers.items()}
