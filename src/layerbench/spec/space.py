"""Cells whose files cannot fit on their stack's device, refused before anything runs.

The files come from a function the caller passes (``workloads.footprint.files``):
job files and personalities are read there, below the spec layer.
"""

from __future__ import annotations

from collections.abc import Callable

from layerbench.spec.devices import device_traits
from layerbench.spec.models import Cell, StackSpec, Workload
from layerbench.spec.traits import traits

Files = Callable[[Workload], dict[str, int]]


def overflowing(cells: list[Cell], files: Files, usable_share: float) -> dict[str, str]:
    """Cell id → why its files do not fit, taking each stack's workloads in spec order
    (the files of the ones that fit stay on the filesystem while the others run)."""
    reasons: dict[str, str] = {}
    kept: dict[StackSpec, dict[str, int]] = {}
    for cell in cells:
        stack = cell.stack
        if (
            device_traits(stack.device.kind).named
            or stack.placement.kind == "tmpfs"
            or not traits(stack.engine.kind).builds_storage
        ):
            # A named device's size is the device's own; tmpfs holds its files in memory; a Docker host's
            # storage is its daemon's, of a size this host is not told.
            continue
        own = files(cell.workload) | cell.workload.data_on(stack)  # a database's records too
        if stack.clients is not None and stack.clients.count > 1:  # a file each (spec/clients.py)
            own = {f"{k} x{stack.clients.count} clients": v * stack.clients.count for k, v in own.items()}
        if stack.placement.kind == "raw":
            reason = _region_reason(own, stack)
        else:
            reason = _file_reason(own, kept.setdefault(stack, {}), stack, usable_share)
        if reason:
            reasons[cell.id] = reason
        elif stack.placement.kind != "raw":
            kept[stack].update(own)
    return reasons


def _region_reason(own: dict[str, int], stack: StackSpec) -> str | None:
    need = max(own.values(), default=0)
    if need <= stack.device.size:
        return None
    return f"its test region ({_gib(need)}) is larger than the {_gib(stack.device.size)} device: enlarge device.size"


def _file_reason(own: dict[str, int], kept: dict[str, int], stack: StackSpec, share: float) -> str | None:
    usable = int(stack.device.size * share)
    new = {k: v for k, v in own.items() if k not in kept}
    before, need = sum(kept.values()), sum(new.values())
    if before + need <= usable:
        return None
    beside = f" beside the {_gib(before)} the stack's earlier workloads keep there" if before else ""
    return (
        f"its files need {_gib(need)} ({', '.join(f'{k} {_gib(v)}' for k, v in new.items())}){beside}, and a "
        f"{_gib(stack.device.size)} {stack.filesystem.type} holds about {_gib(usable)}: enlarge device.size, "
        "or give the workload a stack of its own"
    )


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"
