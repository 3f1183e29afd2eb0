"""What a row of the remote transports' registry holds: a transport, the clients it offers and what each
needs of this host.

Pure data: it imports nothing of layerbench, so every transport's module (and through the registry,
spec/models.py) reads it without a cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

# The kinds of client a transport may offer, each the same role whatever the transport (the rules read the
# role, never the transport): the kernel's own driver makes the export a block device here; a FUSE program
# shows it as a file, attached to a direct-I/O loop device (FUSE and loop devices here); fio's own engine for
# the transport reaches it from fio itself, with no block device here (raw, native fio only).
RemoteClient = Literal["kernel", "fuse", "fio"]
# The client a spec gets without naming one: every transport offers it.
DEFAULT_CLIENT: RemoteClient = "kernel"
# The roles the rules read: a FUSE program under a loop device, and fio's own engine (no block device here).
FUSE_CLIENT: RemoteClient = "fuse"
FIO_CLIENT: RemoteClient = "fio"
# What a storage host needs whatever the transport (a feature of HostCaps.remote, stack/remote/needs.py).
STORAGE_HOST = "storage-host"


@dataclass(frozen=True)
class ClientRow:
    # The host features it needs beyond a storage host (keys of HostCaps.remote), each probed by its transport's
    # module in stack/remote/.
    needs: tuple[str, ...]
    text: str  # what it is, as the schema's description of device.remote.client says
    name: str = ""  # how a refusal names it ("nbdfuse", "fio's nbd engine")
    # fio's own engine only (FIO_CLIENT): the scheme of the export's URI (the device's path), and fio's
    # arguments that reach it in place of a file and an engine.
    scheme: str = ""
    fio_args: Callable[[str], list[str]] | None = None
    # fio's environment that reaches it, where an option cannot (librados reads CEPH_CONF), else None.
    fio_env: Callable[[str], dict[str, str]] | None = None


@dataclass(frozen=True)
class TransportRow:
    # Its clients by kind, in the order `doctor` shows them; the default client is labelled by the transport's
    # name alone, another as "<transport>-<client>".
    clients: Mapping[str, ClientRow]
    # A transport that builds a cluster of storage hosts, not one: the model of ``device.remote.cluster``
    # (a pydantic model; its default when the spec gives none), else None and the field is refused.
    cluster: type | None = None
    # Host features a cell of it may need in place of its clients' own (keys of HostCaps.remote): a cluster the
    # user runs needs the ceph and rbd tools, not the daemons a built one runs.
    features: tuple[str, ...] = ()
