"""block: a device the user names (device.path), formatted only with their agreement."""

from __future__ import annotations

from layerbench.spec.devices.row import DeviceTraits

KIND = "block"
DEVICE = DeviceTraits(named=True, doctor="only a device you name explicitly; never mounted or in use")
