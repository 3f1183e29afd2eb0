"""What this host can build: a snapshot the feasibility rules (spec/rules.py) read.

Probed by ``layerbench.stack.capabilities.probe``; kept as plain data here so
the rules stay pure and testable without root.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HostCaps:
    is_root: bool
    kernel: str
    filesystems: frozenset[str]  # usable: in /proc/filesystems or a loadable module
    mkfs: frozenset[str]  # fs types whose mkfs.<type> binary exists
    loop: bool
    zram: bool
    device_mapper: bool
    fuse: bool
    binaries: frozenset[str]  # which of fio, dockerd, containerd, runc, fuse-overlayfs, ... are on PATH
    docker_drivers: frozenset[str]  # storage drivers this host could run
    notes: tuple[str, ...] = ()
