"""The state of a trial's cluster sampled while the trial runs (stack/target.TrialStates.sample), beside the
monitor's host series: degraded objects, recovery rate, PGs clean, OSDs up, so a trial's throughput can be
read against recovery's progress. A thread of its own, every SAMPLE_S: each sample is a `ceph status`, a
process of a few hundred milliseconds of CPU, and the same in every state, so the cells compare alike."""

from __future__ import annotations

import threading
import time
from types import TracebackType

from layerbench.errors import LayerbenchError
from layerbench.records.trial import MonitorPoint
from layerbench.stack.target import TrialStates

SAMPLE_S = 5.0
JOIN_S = 30.0  # a sample under way when the trial ends: its `ceph status` has a deadline of 10 s


class StateSampler:
    """``with StateSampler(states) as s: ...``; then ``s.points``, their times from the sampler's start."""

    def __init__(self, states: TrialStates, every_s: float = SAMPLE_S) -> None:
        self._states, self._every = states, every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="state-sampler", daemon=True)
        self._t0 = 0.0
        self.points: list[MonitorPoint] = []
        self.errors: list[str] = []

    def __enter__(self) -> StateSampler:
        self._t0 = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join(JOIN_S)

    def _loop(self) -> None:
        """One sample as the trial starts (a short trial has one), then one every interval until it ends."""
        while True:
            t = round(time.monotonic() - self._t0, 3)
            try:
                found = self._states.sample()
                self.points += [MonitorPoint(t, series, value, unit) for series, value, unit in found]
            except (LayerbenchError, OSError, ValueError) as exc:  # a sample missed is a gap, not a failed trial
                self.errors.append(str(exc)[:200])
            if self._stop.wait(self._every):
                return
