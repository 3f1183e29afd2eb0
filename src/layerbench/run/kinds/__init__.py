"""The kinds of trial. What a stack's placement holds decides how its trials are prepared, run and recorded:
one workload at one placement (``single``), fio clients at several at once (``clients``), or database servers
with their clients, on this host or dealt over other nodes (``database``). The loop asks ``kind_of(stack)``
and never looks at what it was handed; a new kind is one module here and one entry in ``KINDS``."""

from __future__ import annotations

from typing import Any, Protocol

from layerbench.records.trial import TrialRecord
from layerbench.run.kinds import clients, database, single
from layerbench.run.schedule import Trial
from layerbench.spec.models import StackSpec, Workload
from layerbench.stack.target import BuildContext


class TrialKind(Protocol):
    """One kind of trial. ``placed`` is what the stack's builder made at the placement for this kind's
    stacks (stack/build.py: a ``Target``, a ``ClientSet`` or a ``Fleet``)."""

    name: str

    def accepts(self, stack: StackSpec) -> bool:
        """Whether the stack's trials are of this kind."""
        ...

    def prepare(self, placed: Any, workloads: list[Workload], ctx: BuildContext) -> dict[str, Any]:
        """What the stack's trials read, made once while the stack lives (files written, data loaded)."""
        ...

    def run(
        self, placed: Any, trial: Trial, prepared: dict[str, Any], ctx: BuildContext, latency_log: bool
    ) -> TrialRecord:
        """One trial, measured and checked; a failure is a record with its category and the tool's stderr."""
        ...


# In the order they are asked: the first that accepts a stack runs its trials.
KINDS: tuple[TrialKind, ...] = (database.KIND, clients.KIND, single.KIND)


def kind_of(stack: StackSpec) -> TrialKind:
    return next(k for k in KINDS if k.accepts(stack))
