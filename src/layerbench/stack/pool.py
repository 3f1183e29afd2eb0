"""Stacks held across a run's rounds (``trials.rebuild: once``): built and prepared once, visited every round.

Rebuilding every stack every round spent most of a run's time outside its trials
(quick: 24 stack changes of about 1.6 s, 11.6% of its wall time). Here each stack
that can be held lives in a StackBuilder of its own and keeps its test files (or
its database's load) from round to round; held stacks of the same device and
filesystem share them, and their engine when it is the same (stack/build.py); a
round still visits the stacks in a freshly shuffled order (schedule.py).

Not held, and built in one transient builder as before (which shares lower layers
between consecutive stacks, and is emptied before a held stack runs): a stack on a
device the user named (one device, one filesystem at a time), a remote device,
and a guest (an idle VM would take CPU from the trials beside it). A held stack
that no longer fits (zram takes memory up to its size, a loop file takes disk) is
released, the least recently used first, before the next is built.
"""

from __future__ import annotations

import os
import shutil
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from layerbench.spec.devices import device_traits
from layerbench.spec.models import StackSpec
from layerbench.spec.traits import traits
from layerbench.stack.build import StackBuilder
from layerbench.stack.target import BuildContext

# What must stay free beside the held stacks: memory for the trials, the page cache and the tools; disk for
# images and logs.
MEMORY_FLOOR = 2 * 2**30
DISK_FLOOR = 1 * 2**30
MOST_HELD = 16  # daemons and devices beyond this cost more to hold than a rebuild saves


@dataclass
class Held:
    """One stack's builder, what it last returned, and which of its workloads are prepared there."""

    builder: StackBuilder
    target: Any = None
    prepared: dict[str, Any] = field(default_factory=dict)
    workloads: set[Any] = field(default_factory=set)

    def fresh(self, target: Any) -> None:
        """A target the builder made anew (the first visit, or after an engine failure): nothing prepared."""
        if target is not self.target:
            self.target, self.prepared, self.workloads = target, {}, set()


def not_held(stack: StackSpec) -> str | None:
    """Why this stack is built afresh for each visit (None: it is held)."""
    if device_traits(stack.device.kind).named:
        return "a device the user named holds one filesystem at a time"
    if stack.device.remote is not None:
        return "a remote device's export and its client are rebuilt each visit"
    if traits(stack.engine.kind).guest:
        return "an idle guest would take CPU from the trials beside it"
    return None


def room(stack: StackSpec, work_dir: Path) -> bool:
    """Is there room to build this stack beside the ones held now?"""
    size, takes = int(stack.device.size), device_traits(stack.device.kind).takes
    if takes == "memory":
        return _available_memory() - size >= MEMORY_FLOOR
    if takes == "disk":
        return _free_disk(work_dir) - size >= DISK_FLOOR
    return True


class StackPool(AbstractContextManager["StackPool"]):
    """The held stacks (least recently used first) and the transient builder."""

    def __init__(self, ctx: BuildContext, keep: bool = True, fits: Callable[[StackSpec, Path], bool] = room) -> None:
        self.ctx, self.keep = ctx, keep  # keep False: every stack in the transient builder (trials.rebuild)
        self._fits = fits
        self._held: OrderedDict[StackSpec, Held] = OrderedDict()
        self._transient = Held(StackBuilder(ctx))

    def visit(self, stack: StackSpec) -> Held:
        """The stack's holder: kept from an earlier visit, or new (the others released as room requires)."""
        if not self.keep or not_held(stack) is not None:
            return self._transient
        self._transient.builder.close()
        if stack in self._held:
            self._held.move_to_end(stack)
            return self._held[stack]
        while self._held and (len(self._held) >= MOST_HELD or not self._fits(stack, self.ctx.work_dir)):
            _, oldest = self._held.popitem(last=False)
            oldest.builder.close()
        self._held[stack] = Held(StackBuilder(self.ctx, share=True))
        return self._held[stack]

    def would_hold(self, stack: StackSpec) -> bool:
        """Would a visit hold this stack without releasing one held now?"""
        if not self.keep or not_held(stack) is not None:
            return False
        return stack in self._held or (len(self._held) < MOST_HELD and self._fits(stack, self.ctx.work_dir))

    def held(self) -> list[StackSpec]:
        return list(self._held)

    def close(self) -> None:
        """Every stack torn down, side by side (nothing is measured now: a daemon's stop, an unmount and a
        device's reset each wait on the kernel or a process, not on the CPU); a failure does not skip the others."""
        holders = [self._transient, *reversed(self._held.values())]
        with ThreadPoolExecutor(max_workers=len(holders), thread_name_prefix="teardown") as pool:
            errors = [e for e in pool.map(_closed, holders) if e is not None]
        self._held.clear()
        if errors:
            raise errors[0]

    def __exit__(self, *exc: object) -> None:
        self.close()


def _closed(holder: Held) -> BaseException | None:
    try:
        holder.builder.close()
    except Exception as exc:
        return exc
    return None


def _available_memory() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")


def _free_disk(path: Path) -> int:
    while not path.exists():
        path = path.parent
    return shutil.disk_usage(path).free
