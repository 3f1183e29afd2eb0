"""Checks that run on every trial: each seed paper's measurement trap, caught.

Pure functions: numbers in, a Check (name, status, plain-language detail) out.
A flag never deletes a result; it tells the reader why not to trust it.
"""

from __future__ import annotations

from dataclasses import dataclass

from layerbench.spec.models import StackSpec

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


ACCOUNTING_MIN_BYTES = 16 * 2**20  # below this, a shortfall is metadata and rounding, not a cache


def accounting_blind(devices: list[str], loop: bool, counted: set[str]) -> str | None:
    """Why the device-accounting check cannot see, or None when it can.

    ``devices``: the device under test and what lies beneath it (``monitor.devices_beneath``),
    ``loop``: whether the device under test is a loop device, ``counted``: devices the monitor
    has counters for. A loop device's bytes go through its backing file, where the host's page
    cache may answer (direct I/O off): only the disk under that file shows what really reached
    storage. When no disk is found under the file (it lives on tmpfs, overlay, a btrfs subvolume
    or NFS, whose device numbers have no block device), the lowest device is the loop device
    itself and a cache under it is invisible. zram and real disks have nothing beneath them:
    every cache is above the device, where its counters see it.
    """
    lowest = devices[-1]
    if loop and len(devices) == 1:
        return (
            f"{lowest}'s backing file lives on no block device (tmpfs, overlay, btrfs or NFS): a cache under "
            f"{lowest} would be invisible, so its counters prove nothing"
        )
    if lowest not in counted:
        return f"no counters for {lowest}"
    return None


def device_accounting(device: str, fio_read: int, fio_written: int, dev_read: int, dev_written: int) -> Check:
    """Compare bytes fio moved with bytes the lowest block device moved.

    Writes may legitimately exceed fio's (journal, metadata, copy-on-write); a
    large *shortfall* means the page cache or a sparse file answered.
    """
    if max(fio_read, fio_written) < ACCOUNTING_MIN_BYTES:
        moved = max(fio_read, fio_written) / 2**20
        return Check("device-accounting", "skip", f"fio moved {moved:.1f} MiB: too little to tell a cache from noise")
    problems = []
    for what, fio_b, dev_b in (("read", fio_read, dev_read), ("written", fio_written, dev_written)):
        if fio_b >= ACCOUNTING_MIN_BYTES and dev_b < ACCOUNTING_MIN_SHARE * fio_b:
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


def layers(stack: StackSpec) -> int:
    """How many layers sit between a workload and its device: each can only cost, never add, speed."""
    count = (stack.filesystem.type != "none") + (stack.engine.kind != "native")
    count += stack.placement.kind == "writable-layer"  # the storage driver (overlay) over the filesystem
    count += stack.device.kind == "loop" and not stack.device.direct_io  # the host's page cache under the loop
    return count


def not_beneath(cell: StackSpec, base: StackSpec) -> str | None:
    """Why ``base`` is no physical bound for ``cell``, or None when it is.

    A bound is the same storage (device and filesystem, or the raw device under the cell's
    filesystem) reached through fewer layers, by as many servers, under no limit the cell lacks:
    then the cell cannot beat it without a cache answering. Anything else may beat it honestly:
    four database instances together beat one, xfs may beat ext4, an unlimited cell a limited one.
    """
    device = ("kind", "size", "path")
    if any(getattr(cell.device, f) != getattr(base.device, f) for f in device):
        return f"another device ({base.device.label()} against {cell.device.label()})"
    if base.filesystem.type != "none" and base.filesystem != cell.filesystem:
        return f"another filesystem ({base.filesystem.label()} against {cell.filesystem.label()})"
    if (base.server, base.instances) != (cell.server, cell.instances):
        return f"{base.instances} instance(s) against {cell.instances}: more servers may add throughput"
    if not set(base.limits.model_dump(exclude_none=True).items()) <= set(
        cell.limits.model_dump(exclude_none=True).items()
    ):
        return "it runs under limits this cell does not have"
    if layers(base) >= layers(cell):
        return "it has as many layers as this cell or more, so nothing says it must be faster"
    return None


# With one trial there is no interval; this far above the baseline is suspect anyway.
SUSPECT_SINGLE_RATIO = 1.5


def faster_than_baseline(
    ratio: float,
    ci_low: float,
    n: tuple[int, int],
    baseline_label: str,
    touches_device: bool,
    not_a_bound: str | None = None,
) -> Check:
    """A cell faster than a baseline beneath it (``not_beneath``) is suspect when both hit the device.

    ``n``: the cell's and the baseline's trials. Without an interval (one trial, or a baseline
    whose own interval includes zero) the bare ratio is judged against ``SUSPECT_SINGLE_RATIO``.
    """
    name = "faster-than-physics"
    if not_a_bound is not None:
        return Check(name, "skip", f"{baseline_label} is no bound for this cell: {not_a_bound}")
    if ratio != ratio:  # NaN: one side has no results
        return Check(name, "skip", f"no ratio to {baseline_label}")
    if not touches_device:
        return Check(name, "pass", f"×{ratio:.2f} {baseline_label}: it never touches the device, so it may be faster")
    why = "a layer above the device cannot add speed, so a cache or an unwritten file probably answered"
    if ci_low == ci_low:
        if ci_low <= 1.0:
            return Check(name, "pass", f"not faster than {baseline_label} beyond its 95% CI")
        return Check(name, "flag", f"faster than {baseline_label} beyond its 95% CI (ratio ≥ {ci_low:.2f}): {why}.")
    if min(n) == 1:
        no_interval, remedy = "in a single trial", "Run 3+ repetitions to tell which."
    else:
        no_interval = f"over {n[0]} and {n[1]} trials, whose baseline varies too much for an interval"
        remedy = "Steady the host or raise trials.repetitions to tell which."
    if ratio < SUSPECT_SINGLE_RATIO:
        return Check(name, "skip", f"×{ratio:.2f} {baseline_label} {no_interval}: no interval to judge")
    return Check(name, "flag", f"×{ratio:.2f} {baseline_label} {no_interval}: {why}, or the host is noisy. {remedy}")


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
