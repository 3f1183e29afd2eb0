"""The explainer's counters: time the workload waited for a CPU, named only when large and lopsided."""

from __future__ import annotations

from layerbench.analysis import explain
from layerbench.analysis.explain import CellCounters


def counters(share: float | None, by: dict[str, float]) -> CellCounters:
    return CellCounters("c", 100, None, 0.5, None, None, None, share, by)


def test_a_container_engine_that_takes_the_workloads_cpu_is_named() -> None:
    native = counters(0.003, {"layerbench": 0.008})
    container = counters(0.010, {"containerd-shim": 0.017, "dockerd": 0.004, "tokio-rt-worker": 0.007})
    line = explain.preemption_line(native, container, ("natively", "in docker:overlay2's volume"))
    assert line is not None
    assert line.startswith("preempted: the workload's threads waited for a CPU they were ready to use 10 ms per second")
    assert "containerd-shim 17.0 ms, tokio-rt-worker 7.0 ms, dockerd 4.0 ms" in line
    assert "the container engine relaying what the workload writes to its output" in line


def test_small_or_even_waits_are_not_named() -> None:
    assert explain.preemption_line(counters(0.003, {}), counters(0.004, {"x": 0.004}), ("a", "b")) is None  # < 0.5%
    assert explain.preemption_line(counters(0.008, {}), counters(0.012, {"x": 0.01}), ("a", "b")) is None  # < 2x
    assert explain.preemption_line(counters(None, {}), counters(0.05, {"x": 0.1}), ("a", "b")) is None  # not counted
