"""The remote device layer: the backing device is made here as a local one would be, a storage host (a
network namespace on a veth link, shaped if asked) exports it with a transport's target, and that
transport's client attaches it here as the block device the rest of the stack builds on.

Torn down in reverse: client, target, link shaping, storage host, backing device. A transport that builds a
cluster (many backing devices and storage hosts) owns its whole build instead (its registry entry's ``build``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from layerbench.spec.models import DeviceSpec
from layerbench.stack.device import device
from layerbench.stack.remote import TRANSPORTS
from layerbench.stack.remote.host import storage_host
from layerbench.stack.remote.link import shaped
from layerbench.stack.target import BuildContext, Device


@contextmanager
def remote_device(spec: DeviceSpec, ctx: BuildContext) -> Iterator[Device]:
    remote = spec.remote
    assert remote is not None
    own = TRANSPORTS[remote.transport].build
    if own is not None:  # a cluster: its devices, storage hosts and daemons are its own to build
        with own(spec, ctx) as dev:
            yield dev
        return
    attach = TRANSPORTS[remote.transport].attach
    assert attach is not None
    local = spec.model_copy(update={"remote": None})
    with (
        device(local, ctx) as backing,
        storage_host(ctx) as host,
        shaped(host, remote.link, ctx),
        attach(backing, host, remote, ctx) as attached,
    ):
        info = {
            **attached.info,
            "transport": remote.transport,
            "backing": backing.path,
            "backing_kind": backing.kind,
            "storage_host": host.netns,
            "link": remote.link.label() or "unshaped",
        }
        yield Device(attached.path, attached.kind, attached.size_bytes, info)
