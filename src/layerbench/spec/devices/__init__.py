"""The local device kinds' registry, as the spec reads it: one module per kind, each holding its row (whether
it builds anything here, whether the user names it, what its size takes of this host, whether a file is behind
it, what this host must have for it).

The models derive ``DeviceKind`` from the keys below and check device.path and device.remote against a row;
the rules, `doctor`, the pool, the run's checks of space and of agreement read the rows. The stack side of each
kind is its builder in stack/device.py (``BUILDERS``, keyed as here). A new kind is one module here, one entry
below, and its builder there with its line in that dict.
"""

from __future__ import annotations

from layerbench.spec.devices import block, loop, none, zram
from layerbench.spec.devices.row import DeviceTraits

# An explicit list, in the order the spec's schema and `doctor` show them (no discovery by import).
DEVICES: dict[str, DeviceTraits] = {m.KIND: m.DEVICE for m in (loop, zram, block, none)}
# The kind a stack's device is without naming one.
DEFAULT_DEVICE = loop.KIND


def device_traits(kind: str) -> DeviceTraits:
    """The row of a device kind (``DeviceSpec.kind``)."""
    return DEVICES[kind]


def named_kinds() -> list[str]:
    """The kinds the user names by device.path."""
    return [k for k, t in DEVICES.items() if t.named]
