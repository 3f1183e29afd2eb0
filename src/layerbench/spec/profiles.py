"""Each container's limits under a resource profile (seed 000, Table 2) and a tuning (seed 001).

Seed 000 divided the host's cores, memory and disk bandwidth by the largest
number of containers it ran (eight) and gave each container that share of the
resources its profile names, whatever the number running at the time. The
budget divided here is the host's (or what the spec's ``resources`` says),
with the device's bandwidth as measured when the spec gives none.
"""

from __future__ import annotations

from dataclasses import dataclass

from layerbench.spec.databases import PROFILE_RESOURCES, tuned
from layerbench.spec.models import Limits, StackSpec


@dataclass(frozen=True)
class Budget:
    """What the profiles divide, and by how many containers."""

    cpus: float
    memory: int
    max_instances: int
    read_bps: int | None = None  # None: measure the device
    write_bps: int | None = None

    def with_bandwidth(self, read_bps: int, write_bps: int) -> Budget:
        return Budget(self.cpus, self.memory, self.max_instances, read_bps, write_bps)


def needs_bandwidth(stack: StackSpec, budget: Budget) -> bool:
    wants = "bandwidth" in PROFILE_RESOURCES[stack.profile]
    return wants and (budget.read_bps is None or budget.write_bps is None)


def instance_limits(stack: StackSpec, budget: Budget, index: int, host_cpus: int) -> Limits:
    """Limits of instance ``index``: the stack's own, then its profile's shares, then its tuning's pinning."""
    share = PROFILE_RESOURCES[stack.profile]
    n = budget.max_instances
    fields = stack.limits.model_dump(exclude_none=True)
    if "cpu" in share:
        fields.setdefault("cpus", round(budget.cpus / n, 3))
    if "memory" in share:
        fields.setdefault("memory", budget.memory // n)
    if "bandwidth" in share and budget.read_bps and budget.write_bps:
        fields.setdefault("read_bps", budget.read_bps // n)
        fields.setdefault("write_bps", budget.write_bps // n)
    if tuned(stack.tuning, "cpuset"):
        fields.setdefault("cpuset", str(index % max(1, host_cpus)))  # one core each, round robin
    return Limits.model_validate(fields)
