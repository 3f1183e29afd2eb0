"""What a row of the local device kinds' registry holds: what the spec, the rules, the pool and `doctor` ask
of a kind of device at the bottom of a stack.

Pure data and the shape of a function: it imports nothing of layerbench but the host's snapshot, so each kind's
module (and through the registry, spec/models.py) reads it without a cycle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from layerbench.spec.feasibility import HostCaps

# Why this host cannot make a device of a kind, or None.
HostRule = Callable[[HostCaps], str | None]


@dataclass(frozen=True)
class DeviceTraits:
    # False: nothing is built here (the storage a Kubernetes claim or a Docker host's daemon has of its own).
    builds: bool = True
    # The user's own device, named by device.path (required, and for no other kind): formatted only with its
    # owner's agreement, one filesystem at a time, its size its own.
    named: bool = False
    # What device.size takes from this host, which the pool and the run's space check weigh: the work
    # directory's disk, or memory; None: nothing of this host's.
    takes: Literal["disk", "memory"] | None = None
    # A file on this host's disk is behind it: device.direct_io applies, and without it the host's page cache
    # is a layer of its own (labelled "<kind>(buffered)").
    file_backed: bool = False
    host: HostRule | None = None  # why this host cannot make one
    # `doctor`'s note where it probes nothing ahead (a device named by its owner is checked when a run starts).
    doctor: str | None = None
