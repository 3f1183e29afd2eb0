"""What one trial produced, as the run stage hands it to the store: its samples, its checks, the monitor's
points, a CPU profile. Below both the run stage and the store, so neither borrows the other's types."""

from __future__ import annotations

from dataclasses import dataclass, field

from layerbench.records.checks import Check
from layerbench.records.info import TrialInfo
from layerbench.records.sample import Sample


@dataclass(frozen=True)
class MonitorPoint:
    t: float
    series: str
    value: float
    unit: str


@dataclass(frozen=True)
class TrialRecord:
    cell_id: str
    repetition: int
    status: str  # "ok" | "failed"
    category: str | None
    started_at: float
    ended_at: float
    argv: list[str]
    raw_output: str
    stderr: str
    info: TrialInfo
    samples: list[Sample]
    checks: list[Check] = field(default_factory=list)
    monitor: list[MonitorPoint] = field(default_factory=list)
    profile: ProfileRecord | None = None
    logs: dict[str, str] = field(default_factory=dict)  # the tool's own logs, as written ("lat": fio's latency)


@dataclass(frozen=True)
class ProfileRecord:
    """A trial's CPU profile: folded stacks (``comm;root;...;leaf`` -> samples), perf stat's counters,
    and what the profiler said (its stderr, or why the profile is partial)."""

    kind: str
    folded: dict[str, int]
    counters: dict[str, float]
    detail: str = ""
