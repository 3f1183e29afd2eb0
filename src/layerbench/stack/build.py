"""Build stacks layer by layer, keeping what consecutive stacks share.

A stack is four layers: device → filesystem → engine → placement (each engine
behind the one interface of stack/engines). Stacks run
one after another, and when the next stack shares its lower layers with the
current one (same device and filesystem, say, but another placement) only the
layers above the first difference are torn down and rebuilt. Each layer lives
in its own ExitStack, so teardown always runs top-down, on success, error or
Ctrl-C.

Builders of held stacks (stack/pool.py, one builder per stack) share more: a
device and its filesystem with every held stack of the same device and
filesystem kind, and the engine too when it is the same, as long as the
filesystem has room for the next stack's files (else a copy of its own). They
are counted in the run's Shared (stack/shared.py) and go with their last user.
A stack straight on a device (no filesystem) always has a device of its own.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Hashable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

from layerbench.errors import LayerbenchError
from layerbench.spec.databases import PROFILE_RESOURCES
from layerbench.spec.models import StackSpec
from layerbench.stack import calibrate
from layerbench.stack.clients import ClientSet, client_targets
from layerbench.stack.device import device
from layerbench.stack.engines import Engine, engine_type
from layerbench.stack.filesystem import filesystem
from layerbench.stack.fleet import Fleet, fleet
from layerbench.stack.remote.layer import remote_device
from layerbench.stack.target import BuildContext, Mount, Target

PLACEMENT_LEVEL = 3  # device 0, filesystem 1, engine 2
# Filesystems a held stack has a copy of its own of: none (its files are the device itself), and btrfs, whose
# space under random writes grows past its files (one 256 MiB file filled a 1 GiB btrfs: quick.yaml), so
# room when a stack arrives says nothing of room a round later.
UNSHARED = frozenset({"none", "btrfs"})
# What a shared filesystem must have free beyond the next stack's own needs, as a share of its size: a
# daemon's images, the held stacks' growth, the filesystem's own reserve.
ROOM_MARGIN = 1 / 8
# What one database instance may write on its filesystem beside its load: its files, write-ahead log and
# logs (a database stack names no data size; PostgreSQL's own files and WAL take tens of MiB before a record).
SERVER_ROOM = 256 * 2**20


@dataclass
class _Layer:
    key: Any
    exits: ExitStack
    value: Any
    shared: Hashable | None = None  # its key in the run's Shared (device, filesystem, engine)


class StackBuilder(AbstractContextManager["StackBuilder"]):
    def __init__(self, ctx: BuildContext, share: bool = False) -> None:
        self.ctx, self.share = ctx, share  # share: the lower layers with other held stacks' builders
        self._layers: list[_Layer] = []
        self._copy: Hashable = object()  # which copy of the shared lower layers this stack uses
        self._claim: tuple[Hashable, int] | None = None  # what it will write on that copy's filesystem, unwritten

    def enter(self, stack: StackSpec, data_bytes: int) -> Target | Fleet | ClientSet:
        """Make ``stack`` the current one and return its placement target (its servers, for a database stack)."""
        keys = _keys(stack)
        keep = 0
        while keep < len(self._layers) and self._layers[keep].key == keys[keep]:
            keep += 1
        self._close_from(keep)
        if keep == 0:
            self._copy = self._copy_for(stack, data_bytes)
        builders = (self._device, self._filesystem, self._engine, self._placement)
        for level in range(keep, len(keys)):
            exits = ExitStack()
            shared = _shared_key(stack, level, self._copy)
            try:
                if shared is None:
                    value = builders[level](stack, data_bytes, exits)
                else:
                    make = partial(builders[level], stack, data_bytes)
                    value = exits.enter_context(self.ctx.shared.use(shared, make))
            except BaseException:
                exits.close()
                raise
            self._layers.append(_Layer(keys[level], exits, value, shared))
        return self._layers[-1].value

    def close(self) -> None:
        self.settle()
        self._close_from(0)

    def settle(self) -> None:
        """The stack's files or load are written: what is free on its filesystem now says so."""
        if self._claim is not None:
            self.ctx.shared.release(*self._claim)
            self._claim = None

    def discard(self, level: int) -> list[str]:
        """Tear down from ``level`` up after a failure there (a dead daemon), keeping what is below.

        Teardown errors of broken layers are returned, not raised: their ledger rows
        stay live and cleanup takes them; the run goes on.
        """
        self.settle()  # nothing more is written there by this stack as it stands
        for layer in self._layers[level:]:
            if layer.shared is not None:  # the other stacks on it get a new one when they find it broken too
                self.ctx.shared.forget(layer.shared, layer.value)
        try:
            self._close_from(level)
        except (LayerbenchError, OSError) as exc:
            del self._layers[level:]
            return [str(exc)]
        return []

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _close_from(self, level: int) -> None:
        # Top-down; a failure in one layer must not skip the layers below it.
        errors: list[BaseException] = []
        while len(self._layers) > level:
            layer = self._layers.pop()
            try:
                layer.exits.close()
            except Exception as exc:
                errors.append(exc)
        if errors:
            raise errors[0]

    def _copy_for(self, stack: StackSpec, data_bytes: int) -> Hashable:
        """The first copy of this device and filesystem whose filesystem has room for the stack's files
        (a new one when none has); a copy of its own when this builder does not share, or the filesystem
        is one of UNSHARED."""
        if not self.share or stack.filesystem.type in UNSHARED:
            return object()
        need = _needs(stack, data_bytes)
        for copy in itertools.count():
            key = _shared_key(stack, 1, copy)
            mount = self.ctx.shared.value(key)
            if mount is None or _has_room(mount, need + self.ctx.shared.claimed(key)):
                self.settle()
                self._claim = (key, need)
                self.ctx.shared.claim(key, need)
                return copy
        raise AssertionError("unreachable")

    def _value(self, level: int) -> Any:
        return self._layers[level].value

    def _device(self, stack: StackSpec, data_bytes: int, exits: ExitStack) -> Any:
        build = remote_device if stack.device.remote else device
        return exits.enter_context(build(stack.device, self.ctx))

    def _filesystem(self, stack: StackSpec, data_bytes: int, exits: ExitStack) -> Any:
        return exits.enter_context(filesystem(self._value(0), stack.filesystem, self.ctx))

    def _engine(self, stack: StackSpec, data_bytes: int, exits: ExitStack) -> Engine:
        return exits.enter_context(engine_type(stack.engine.kind).start(self._value(1), stack.engine, self.ctx))

    def _placement(self, stack: StackSpec, data_bytes: int, exits: ExitStack) -> Target | Fleet | ClientSet:
        mount, engine = self._value(1), self._value(2)
        if stack.server is not None:
            return exits.enter_context(fleet(stack, mount, engine, self.ctx))
        if stack.clients is not None:
            on = partial(_engine_on, stack, mount, self.ctx)
            return exits.enter_context(client_targets(stack, mount, engine, data_bytes, self.ctx, on))
        return exits.enter_context(engine.place(mount, stack, data_bytes, self.ctx))


def _engine_on(stack: StackSpec, mount: Mount, ctx: BuildContext, node: str) -> AbstractContextManager[Engine]:
    """The stack's engine on another node of its cluster (clients dealt over several: stack/clients.py)."""
    return engine_type(stack.engine.kind).start(mount, stack.engine.model_copy(update={"node": node}), ctx)


def _keys(stack: StackSpec) -> tuple[Any, ...]:
    return (
        stack.device,
        (stack.device, stack.filesystem),
        (stack.device, stack.filesystem, stack.engine),
        stack,
    )


def _shared_key(stack: StackSpec, level: int, copy: Hashable) -> Hashable | None:
    """A lower layer's key in the run's Shared: the device is keyed with its filesystem (one filesystem per
    device), the engine with both. The placement is the stack's own."""
    if level == PLACEMENT_LEVEL:
        return None
    return (level, (stack.device, stack.filesystem, stack.engine)[: max(level, 1) + 1], copy)


def _needs(stack: StackSpec, data_bytes: int) -> int:
    """What the stack will write on its filesystem: its files, or its servers and the device's calibration
    (a profile that divides bandwidth measures it with a file of its own: stack/calibrate.py)."""
    if stack.server is None:
        return data_bytes
    calibration = calibrate.SIZE if "bandwidth" in PROFILE_RESOURCES[stack.profile] else 0
    return data_bytes + SERVER_ROOM * stack.instances + calibration


def _has_room(mount: Mount, need: int) -> bool:
    if mount.mountpoint is None:
        return False
    found = os.statvfs(mount.mountpoint)
    return found.f_bavail * found.f_frsize >= need + ROOM_MARGIN * found.f_blocks * found.f_frsize


@contextmanager
def single(stack: StackSpec, ctx: BuildContext, data_bytes: int) -> Iterator[Target | Fleet | ClientSet]:
    """Build one stack on its own (tests, ad-hoc use)."""
    with StackBuilder(ctx) as builder:
        yield builder.enter(stack, data_bytes)
