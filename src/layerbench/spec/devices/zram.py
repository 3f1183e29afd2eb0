"""zram: a compressed RAM disk, steady where a disk is noisy."""

from __future__ import annotations

from layerbench.spec.devices.row import DeviceTraits
from layerbench.spec.feasibility import HostCaps

KIND = "zram"


def missing(caps: HostCaps) -> str | None:
    return None if caps.zram else "no zram support in this kernel (modprobe zram failed)"


DEVICE = DeviceTraits(takes="memory", host=missing)
