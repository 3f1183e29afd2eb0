"""The native engine: the workload runs on the host, its limits in a cgroup of the cell's own."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

from layerbench.spec.models import EngineSpec, StackSpec
from layerbench.stack.placement import native_placement
from layerbench.stack.target import BuildContext, Mount, Target


@dataclass(frozen=True)
class NativeEngine:
    kind: str = "native"

    def place(
        self, mount: Mount, stack: StackSpec, data_bytes: int, ctx: BuildContext
    ) -> AbstractContextManager[Target]:
        return native_placement(mount, stack.placement, ctx, stack.limits)


@contextmanager
def start(mount: Mount, spec: EngineSpec, ctx: BuildContext) -> Iterator[NativeEngine]:
    """Nothing to start: the host is the engine."""
    yield NativeEngine()
