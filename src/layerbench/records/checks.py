"""A check's verdict on one trial, the one type every layer uses: what the run stage records, the store keeps
and the analysis reads."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # "pass" | "flag" | "skip"
    detail: str


# What a flag of each kind usually means, in one line: the first screen gives it once per kind, and
# `show --checks` or the report give each cell's own detail.
MEANINGS = {
    "device-accounting": "the disk moved less than half of fio's bytes: a cache or a sparse file answered",
    "faster-than-physics": "faster than a bound beneath it: a cache answered, or the host was noisy",
    "bottleneck": "the CPU ran out before the device: the trial measured the CPU, not storage",
    "contended": "other processes used the CPU during the trial: the ratio is not to be trusted",
    "noisy": "trials varied by more than 10%: raise repetitions or runtime, keep the host quiet",
    "not-comparable": "the baseline has no results, so no ratio can be trusted",
    "clock-bound": "IOzone's clock could not time the test: a ceiling, not a speed",
    "volatile-mount": "fsync does nothing on this mount: flush-bound results are not comparable",
    "limit-applied": "the cgroup does not enforce the limit the spec set",
    "client-errors": "the database refused operations, and the client's throughput counts them",
    "clients-in-step": "the clients started or finished apart: their load overlapped for less than the runtime",
    "workload-file": "layerbench set some of the YCSB workload file's properties otherwise (threads, time, binding)",
    "cluster-state": "the Ceph cluster was not in the state its cell names when the trial ran",
    "ceph-hdd-settings": "Ceph's OSDs took hard-disk settings on a device that is no hard disk: recovery is throttled",
    "shared-machine": "the clients' nodes are one machine: their total is one machine's, not as many machines'",
}
