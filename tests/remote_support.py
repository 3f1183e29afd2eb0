"""Which remote transports this machine can run, for tests that run each one where it can.

A transport the host lacks is skipped with the reason the feasibility rules give; where the caller
expects it (the VM tier sets LAYERBENCH_EXPECT_REMOTE to the transports its guest has), its absence
fails instead: a skip there would prove nothing. A skip for a kernel part this machine lacks (the nbd
driver, NVMe/TCP, iSCSI, netem) is one of tests/unavoidable_skips.py's; any other fails on CI.
"""

from __future__ import annotations

import os

import pytest

from layerbench.spec.models import StackSpec
from layerbench.spec.rules import host_has_remote, qdisc_of
from layerbench.spec.transports import needs as client_needs
from tests.unavoidable_skips import UNAVOIDABLE, cannot, caps

# name in test ids -> the spec's remote block
TRANSPORTS = {
    "nbd-fuse": {"transport": "nbd", "client": "fuse"},
    "nbd": {"transport": "nbd"},
    "nvme-tcp": {"transport": "nvme-tcp"},
    "iscsi": {"transport": "iscsi"},
}
# fio's nbd engine as the client: raw native stacks only, so tested on its own
CLIENTS = {**TRANSPORTS, "nbd-fio": {"transport": "nbd", "client": "fio"}}
# A remote feature (stack/remote/needs.py) that is a kernel part -> its entry in tests/unavoidable_skips.py
KERNEL_PARTS = {"nbd-kernel": "nbd", "nvme-tcp": "nvme-tcp", "iscsi": "iscsi", "netem": "netem"}


def require(name: str, link: dict | None = None) -> dict:
    """The remote block for ``name`` (on a link shaped so, if given), or skip with the reason; fail where
    the VM tier expects the transport (and, for a delay, "netem")."""
    remote = {**CLIENTS[name], **({"link": link} if link else {})}
    stack = StackSpec.model_validate(
        {"device": {"kind": "zram", "remote": remote}, "filesystem": "none", "engine": "native", "placement": "raw"}
    )
    reason = host_has_remote(stack, caps())
    if reason:
        expected = os.environ.get("LAYERBENCH_EXPECT_REMOTE", "").split(",")
        if {name, *(["netem"] if link and link.get("delay") else [])} <= set(expected):
            pytest.fail(f"{name} is expected here, but: {reason}")
        spec = stack.device.remote
        assert spec is not None
        needs = [*client_needs(spec.transport, spec.client), qdisc_of(spec.link)]
        for part in (KERNEL_PARTS[f] for f in needs if f in KERNEL_PARTS):
            if UNAVOIDABLE[part].lacks():
                cannot(part, reason)
        pytest.skip(reason)
    return remote
