"""loop: a file in the work directory, written in full, attached with direct I/O."""

from __future__ import annotations

from layerbench.spec.devices.row import DeviceTraits
from layerbench.spec.feasibility import HostCaps

KIND = "loop"


def missing(caps: HostCaps) -> str | None:
    return None if caps.loop else "no loop device support (/dev/loop-control is missing)"


DEVICE = DeviceTraits(takes="disk", file_backed=True, host=missing)
