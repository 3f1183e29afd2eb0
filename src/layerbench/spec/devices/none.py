"""none: nothing built here; the storage is a Kubernetes claim's or a Docker host's own."""

from __future__ import annotations

from layerbench.spec.devices.row import DeviceTraits

KIND = "none"
DEVICE = DeviceTraits(builds=False)
