"""vm: a qemu guest booted per stack, whose disk is the stack's device or a disk file on its filesystem."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from layerbench.spec.engines.row import GUEST_UNPROFILED, HOST_PLACEMENTS, EngineTraits
from layerbench.spec.feasibility import HostCaps

if TYPE_CHECKING:
    from layerbench.spec.models import StackSpec

KIND = "vm"
# Database servers one guest hosts: qemu forwards one port from the host per server, set at boot.
VM_MAX_SERVERS = 8


@dataclass(frozen=True)
class GuestCaps:
    """Whether a guest boots here, probed only for experiments that have guest cells: a probe boots a kernel."""

    accel: str | None = None  # "kvm" where a probe guest ran under KVM, "tcg" where only emulation can
    missing: str | None = "not probed: the experiment has no VM cells"  # why no guest can boot here


def of(caps: HostCaps) -> GuestCaps:
    """The guests' part of the host's snapshot (vm+docker boots the same guest, and reads it too)."""
    found = caps.engines.get(KIND)
    return found if isinstance(found, GuestCaps) else GuestCaps()


def ready(s: StackSpec, caps: HostCaps) -> str | None:
    missing = of(caps).missing
    if missing:
        return f"no guest can boot here: {missing}"
    if s.limits.model_dump(exclude_none=True):
        return "limits on a VM cell are not supported yet (a guest's size is not a cgroup limit): drop them"
    if s.server is not None and s.instances > VM_MAX_SERVERS:
        return f"a VM hosts at most {VM_MAX_SERVERS} database servers (one forwarded port each)"
    return None


def emulation_refused(s: StackSpec, caps: HostCaps, emulation: str) -> str | None:
    """A guest's cell where only an emulated CPU can run it: refused unless the experiment allows emulation."""
    if of(caps).accel != "tcg" or emulation == "allow":
        return None
    return (
        "KVM cannot run a guest on this host, and an emulated CPU is 10-50x slower: VM cells are refused "
        "(set 'emulation: allow' in the spec for a functional test; its cells are flagged not comparable)"
    )


# The guest is the host: the device, or a directory on the disk file's filesystem.
ENGINE = EngineTraits(
    "a VM",
    container=False,
    guest=True,
    placements=HOST_PLACEMENTS,
    server_limits=False,
    unprofiled=GUEST_UNPROFILED,
    probe="guest-boot",
    rule=ready,
)
