"""Checks that run on every trial: each seed paper's measurement trap, caught.

Pure functions: numbers in, a Check (name, status, plain-language detail) out.
A flag never deletes a result; it tells the reader why not to trust it.
"""

from __future__ import annotations

from dataclasses import dataclass

# Below this share of fio's bytes reaching the disk, something else answered.
ACCOUNTING_MIN_SHARE = 0.5
NOISY_CV = 0.10
CPU_SATURATED_PCT = 90.0
DEVICE_IDLE_UTIL_PCT = 50.0


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # "pass" | "flag" | "skip"
    detail: str


def device_accounting(device: str, fio_read: int, fio_written: int, dev_read: int, dev_written: int) -> Check:
    """Compare bytes fio moved with bytes the lowest block device moved.

    Writes may legitimately exceed fio's (journal, metadata, copy-on-write); a
    large *shortfall* means the page cache or a sparse file answered.
    """
    problems = []
    for what, fio_b, dev_b in (("read", fio_read, dev_read), ("written", fio_written, dev_written)):
        if fio_b >= 16 * 2**20 and dev_b < ACCOUNTING_MIN_SHARE * fio_b:
            share = dev_b / fio_b
            problems.append(
                f"fio {what} {fio_b / 2**20:.0f} MiB but {device} {what} {dev_b / 2**20:.0f} MiB ({share:.0%})"
            )
    if not problems:
        return Check("device-accounting", "pass", f"{device} moved at least {ACCOUNTING_MIN_SHARE:.0%} of fio's bytes")
    why = (
        "; ".join(problems) + ": the page cache or an unwritten (sparse) file answered, not the device. "
        "Use direct I/O end to end (loop --direct-io=on, fio direct=1) and fill files before reading them."
    )
    return Check("device-accounting", "flag", why)


def noisy(cv: float, n: int, threshold: float = NOISY_CV) -> Check:
    if n < 2:
        return Check("noisy", "skip", "one trial: no spread to judge; raise trials.repetitions")
    if cv <= threshold:
        return Check("noisy", "pass", f"CV {cv:.1%} over {n} trials")
    return Check(
        "noisy",
        "flag",
        f"CV {cv:.1%} over {n} trials: the host is noisy. Raise trials.repetitions or the runtime, "
        "use a steadier device (zram) for relationships, and keep other work off the machine.",
    )


def faster_than_baseline(ratio_ci_low: float, baseline_label: str, touches_device: bool, single: bool = False) -> Check:
    """A cell faster than its baseline beyond the CI is suspect when both hit the same device.

    ``single``: one trial each, so ``ratio_ci_low`` is the bare ratio; said so in the detail.
    """
    if ratio_ci_low != ratio_ci_low:  # NaN: no interval, nothing to judge
        return Check("faster-than-physics", "skip", "no confidence interval (one trial)")
    if ratio_ci_low <= 1.0:
        return Check("faster-than-physics", "pass", f"not faster than {baseline_label}")
    if not touches_device:
        return Check(
            "faster-than-physics",
            "pass",
            f"faster than {baseline_label}, as expected: it never touches the device",
        )
    why = "a layer above the device cannot add speed, so a cache or an unwritten file probably answered"
    if single:
        return Check(
            "faster-than-physics",
            "flag",
            f"×{ratio_ci_low:.2f} {baseline_label} in a single trial: {why}, or the host is noisy. "
            "Run 3+ repetitions to tell which.",
        )
    return Check(
        "faster-than-physics",
        "flag",
        f"faster than {baseline_label} beyond its 95% CI (ratio ≥ {ratio_ci_low:.2f}): {why}.",
    )


FIO_REMEDY = "Fewer jobs, or more cores, or a lighter I/O engine."
DATABASE_REMEDY = (
    "The servers and their clients share the CPUs: storage layers hardly show here. "
    "Fewer client threads, a data set larger than memory, or more cores."
)


def bottleneck(cpu_busy_pct: float, device_util_pct: float | None, remedy: str = FIO_REMEDY) -> Check:
    if cpu_busy_pct >= CPU_SATURATED_PCT and (device_util_pct is None or device_util_pct < DEVICE_IDLE_UTIL_PCT):
        util = "unknown" if device_util_pct is None else f"{device_util_pct:.0f}%"
        return Check(
            "bottleneck",
            "flag",
            f"CPU {cpu_busy_pct:.0f}% busy while the device was {util} utilized: this trial measured the CPU, "
            f"not storage. {remedy}",
        )
    return Check("bottleneck", "pass", f"CPU {cpu_busy_pct:.0f}% busy")
