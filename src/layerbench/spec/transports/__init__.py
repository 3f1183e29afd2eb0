"""The remote transports' registry, as the spec reads it: one module per transport, each holding its row (the
clients it offers, what each needs of this host, how the schema describes it).

As with the engines (spec/engines/), the generic code reads a row and never a name: the models derive
``Transport`` from the keys below and check a client against its transport's row, the rules ask a client's
needs, `doctor` shows a row per client, fio's workloads reach an export through its fio client's row. Nothing
outside this package and stack/remote/ writes a transport's name (``tests/unit/test_seam.py`` fails on one).
The stack side of each transport (attach, what its probe looks for, its removers) is stack/remote/<transport>
(rbd's is the package stack/remote/ceph/).
A new transport is one module here, one entry below, and its module there with its line in that registry.
"""

from __future__ import annotations

from typing import get_args

from layerbench.spec.transports import iscsi, nbd, nvme_tcp, rbd
from layerbench.spec.transports.rbd import ClusterSpec, OwnClusterSpec, cluster_model
from layerbench.spec.transports.row import (
    DEFAULT_CLIENT,
    FIO_CLIENT,
    FUSE_CLIENT,
    STORAGE_HOST,
    ClientRow,
    RemoteClient,
    TransportRow,
)

__all__ = [
    "DEFAULT_CLIENT",
    "DEFAULT_TRANSPORT",
    "FIO_CLIENT",
    "FUSE_CLIENT",
    "STORAGE_HOST",
    "TRANSPORTS",
    "ClientRow",
    "ClusterSpec",
    "OwnClusterSpec",
    "RemoteClient",
    "TransportRow",
    "client_refused",
    "clients_description",
    "cluster_model",
    "cluster_refused",
    "device_clients",
    "doctor_remotes",
    "fio_export_args",
    "fio_export_env",
    "label",
    "needs",
    "row",
    "without_device",
]

# An explicit list, in the order the spec's schema and `doctor` show them (no discovery by import).
TRANSPORTS: dict[str, TransportRow] = {m.KIND: m.TRANSPORT for m in (nbd, nvme_tcp, iscsi, rbd)}
# The transport a spec's remote device gets without naming one.
DEFAULT_TRANSPORT = nbd.KIND


def row(transport: str, client: str) -> ClientRow:
    """The row of a client its transport offers (``RemoteSpec`` has checked that it does)."""
    return TRANSPORTS[transport].clients[client]


def label(transport: str, client: str) -> str:
    """How a cell and its device name a transport's client: the default by the transport's name alone."""
    return transport if client == DEFAULT_CLIENT else f"{transport}-{client}"


def needs(transport: str, client: str) -> tuple[str, ...]:
    """The host features (keys of HostCaps.remote) a client needs beyond a storage host."""
    return row(transport, client).needs


def client_refused(transport: str, client: str) -> str | None:
    """Why ``transport`` has no client of that kind (which transports have one, which clients it has), or None."""
    offered = TRANSPORTS[transport].clients
    if client in offered:
        return None
    others = " or ".join(f"'{t}'" for t, r in TRANSPORTS.items() if client in r.clients)
    has = f"a {next(iter(offered))} client" if len(offered) == 1 else f"the {', '.join(offered)} clients"
    return f"device.remote.client '{client}' is for transport {others}; {transport} has {has} only"


def cluster_refused(transport: str, given: bool) -> str | None:
    """Why ``device.remote.cluster`` is refused for ``transport`` (it builds one storage host), or None."""
    if not given or TRANSPORTS[transport].cluster is not None:
        return None
    clustered = " or ".join(f"'{t}'" for t, r in TRANSPORTS.items() if r.cluster is not None)
    return f"device.remote.cluster is for transport {clustered}; {transport} exports one device from one storage host"


def clients_description() -> str:
    """The schema's words for device.remote.client: what each client of a transport with a choice is."""
    choices = {t: r.clients for t, r in TRANSPORTS.items() if len(r.clients) > 1}
    said = {t: _joined([c[k].text for k in get_args(RemoteClient) if k in c]) for t, c in choices.items()}
    if len(said) == 1:
        ((only, text),) = said.items()
        return f"{only} only: {text}"
    return "; ".join(f"{t}: {text}" for t, text in said.items())


def _joined(texts: list[str]) -> str:
    return texts[0] if len(texts) == 1 else f"{', '.join(texts[:-1])}, or {texts[-1]}"


def doctor_remotes() -> list[tuple[str, dict[str, str]]]:
    """`doctor`'s remote devices: each client's label and its ``device.remote`` block, in the rows' order."""
    return [
        (label(t, c), {"transport": t} if c == DEFAULT_CLIENT else {"transport": t, "client": c})
        for t, r in TRANSPORTS.items()
        for c in r.clients
    ]


def device_clients(transport: str) -> list[str]:
    """The clients of ``transport`` that make its export a block device here (all but fio's own engine)."""
    offered = TRANSPORTS[transport].clients
    return [c for c in get_args(RemoteClient) if c in offered and c != FIO_CLIENT]


def without_device(kind: str) -> bool:
    """Whether a device of this kind (a client's label) is an export fio reaches itself, with no block device
    here."""
    return any(kind == label(t, FIO_CLIENT) for t, r in TRANSPORTS.items() if FIO_CLIENT in r.clients)


def fio_export_args(path: str) -> list[str] | None:
    """fio's arguments reaching the export at ``path`` with its transport's own engine, or None where ``path``
    is no such export (a device or a file here)."""
    for r in TRANSPORTS.values():
        fio = r.clients.get(FIO_CLIENT)
        if fio is not None and fio.fio_args is not None and fio.scheme and path.startswith(fio.scheme):
            return fio.fio_args(path)
    return None


def fio_export_env(path: str) -> dict[str, str]:
    """fio's environment that reaches the export at ``path`` (its transport's, where an option cannot); empty
    where ``path`` is no such export or its transport needs none."""
    for r in TRANSPORTS.values():
        fio = r.clients.get(FIO_CLIENT)
        if fio is not None and fio.fio_env is not None and fio.scheme and path.startswith(fio.scheme):
            return fio.fio_env(path)
    return {}
