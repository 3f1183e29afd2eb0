"""Build stacks layer by layer, keeping what consecutive stacks share.

A stack is four layers: device → filesystem → engine → placement (each engine
behind the one interface of stack/engines). Stacks run
one after another, and when the next stack shares its lower layers with the
current one (same device and filesystem, say, but another placement) only the
layers above the first difference are torn down and rebuilt. Each layer lives
in its own ExitStack, so teardown always runs top-down, on success, error or
Ctrl-C.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

from layerbench.errors import LayerbenchError
from layerbench.spec.models import StackSpec
from layerbench.stack.clients import ClientSet, client_targets
from layerbench.stack.device import device
from layerbench.stack.engines import Engine, engine_type
from layerbench.stack.filesystem import filesystem
from layerbench.stack.fleet import Fleet, fleet
from layerbench.stack.remote.layer import remote_device
from layerbench.stack.target import BuildContext, Target


@dataclass
class _Layer:
    key: Any
    exits: ExitStack
    value: Any


class StackBuilder(AbstractContextManager["StackBuilder"]):
    def __init__(self, ctx: BuildContext) -> None:
        self.ctx = ctx
        self._layers: list[_Layer] = []

    def enter(self, stack: StackSpec, data_bytes: int) -> Target | Fleet | ClientSet:
        """Make ``stack`` the current one and return its placement target (its servers, for a database stack)."""
        keys = _keys(stack)
        keep = 0
        while keep < len(self._layers) and self._layers[keep].key == keys[keep]:
            keep += 1
        self._close_from(keep)
        builders = (self._device, self._filesystem, self._engine, self._placement)
        for level in range(keep, len(keys)):
            exits = ExitStack()
            try:
                value = builders[level](stack, data_bytes, exits)
            except BaseException:
                exits.close()
                raise
            self._layers.append(_Layer(keys[level], exits, value))
        return self._layers[-1].value

    def close(self) -> None:
        self._close_from(0)

    def discard(self, level: int) -> list[str]:
        """Tear down from ``level`` up after a failure there (a dead daemon), keeping what is below.

        Teardown errors of broken layers are returned, not raised: their ledger rows
        stay live and cleanup takes them; the run goes on.
        """
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
            return exits.enter_context(client_targets(stack, mount, engine, data_bytes, self.ctx))
        return exits.enter_context(engine.place(mount, stack, data_bytes, self.ctx))


def _keys(stack: StackSpec) -> tuple[Any, ...]:
    return (
        stack.device,
        (stack.device, stack.filesystem),
        (stack.device, stack.filesystem, stack.engine),
        stack,
    )


@contextmanager
def single(stack: StackSpec, ctx: BuildContext, data_bytes: int) -> Iterator[Target | Fleet | ClientSet]:
    """Build one stack on its own (tests, ad-hoc use)."""
    with StackBuilder(ctx) as builder:
        yield builder.enter(stack, data_bytes)
