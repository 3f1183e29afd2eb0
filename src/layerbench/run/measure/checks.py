"""Checks that run on every trial: each seed paper's measurement trap, caught as the trial ends.

Pure functions: numbers in, a Check (name, status, plain-language detail) out.
A flag never deletes a result; it tells the reader why not to trust it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from layerbench.records.checks import Check

# Below this share of fio's bytes reaching the disk, something else answered.
ACCOUNTING_MIN_SHARE = 0.5
CPU_SATURATED_PCT = 90.0
DEVICE_IDLE_UTIL_PCT = 50.0


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
    if not devices:
        return (
            "no device on this host: the storage is a claim's (the cluster's) or a Docker host's (its daemon's), "
            "whose device this host cannot count"
        )
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
    problems, seen = [], []
    for what, fio_b, dev_b in (("read", fio_read, dev_read), ("written", fio_written, dev_written)):
        if fio_b < ACCOUNTING_MIN_BYTES:
            continue
        figures = f"fio {what} {fio_b / 2**20:.0f} MiB, {device} {what} {dev_b / 2**20:.0f} MiB ({dev_b / fio_b:.0%})"
        (problems if dev_b < ACCOUNTING_MIN_SHARE * fio_b else seen).append(figures)
    if not problems:
        return Check(
            "device-accounting",
            "pass",
            f"{device} moved at least {ACCOUNTING_MIN_SHARE:.0%} of fio's bytes: {'; '.join(seen)}",
        )
    why = (
        "; ".join(problems) + ": the page cache or an unwritten (sparse) file answered, not the device. "
        "Use direct I/O end to end (loop --direct-io=on, fio direct=1) and fill files before reading them."
    )
    return Check("device-accounting", "flag", why)


FIO_REMEDY = "Fewer jobs, or more cores, or a lighter I/O engine."
DATABASE_REMEDY = (
    "The servers and their clients share the CPUs: storage layers hardly show here. "
    "Fewer client threads, a data set larger than memory, or more cores."
)


@dataclass(frozen=True)
class CpuLoad:
    """What a trial used of the CPUs, as the monitor saw it (means over the trial)."""

    host_pct: float  # all cores together
    busiest_core: tuple[str, float] | None = None  # the core busiest on average, and how busy (%)
    containers: dict[str, tuple[float, float | None]] = field(default_factory=dict)  # name → (cores used, limit)


def bottleneck(cpu: CpuLoad, device_util_pct: float | None, remedy: str = FIO_REMEDY) -> Check:
    """The CPU ran out while the device idled: judged for the host, per core (one saturated fio job
    on 16 cores reads 6% of the host) and per container against its own CPU limit."""
    saturated = []
    if cpu.host_pct >= CPU_SATURATED_PCT:
        saturated.append(f"CPU {cpu.host_pct:.0f}% busy")
    elif cpu.busiest_core and cpu.busiest_core[1] >= CPU_SATURATED_PCT:
        core, pct = cpu.busiest_core
        saturated.append(f"{core} {pct:.0f}% busy (the host {cpu.host_pct:.0f}%): a thread had a core to itself")
    for name, (used, limit) in sorted(cpu.containers.items()):
        if limit and used >= CPU_SATURATED_PCT / 100 * limit:
            saturated.append(f"container {name or 'of the cell'} used {used:.2f} of its {limit:g} CPUs")
    device = (
        "the device's utilization was unknown (it is not on this host)"
        if device_util_pct is None
        else f"the device was {device_util_pct:.0f}% utilized"
    )
    if saturated and (device_util_pct is None or device_util_pct < DEVICE_IDLE_UTIL_PCT):
        return Check(
            "bottleneck",
            "flag",
            f"{'; '.join(saturated)} while {device}: this trial measured the CPU, not storage. {remedy}",
        )
    core = f", busiest core {cpu.busiest_core[1]:.0f}%" if cpu.busiest_core else ""
    return Check("bottleneck", "pass", f"CPU {cpu.host_pct:.0f}% busy{core}")


def cpu_limit(limits: dict[str, object]) -> float | None:
    """The CPUs a container may use: ``cpus``, or the size of its ``cpuset``, the smaller if both."""
    caps = []
    if limits.get("cpus"):
        caps.append(float(limits["cpus"]))  # type: ignore[arg-type]
    if limits.get("cpuset"):
        caps.append(float(cpuset_size(str(limits["cpuset"]))))
    return min(caps) if caps else None


def cpuset_size(text: str) -> int:
    """How many CPUs a cpuset list names ("0-3,6" is five)."""
    count = 0
    for part in text.split(","):
        low, _, high = part.strip().partition("-")
        count += int(high or low) - int(low) + 1
    return count


# Other processes this busy (cores on average, or this share of the host) make a ratio untrustworthy.
CONTENDED_MIN_CORES = 0.5
CONTENDED_HOST_SHARE = 0.10
# Why containers suffer more than native processes on a busy host (measured; docs/reference/checks.md).
GROUP_SCHEDULING = (
    "Containers suffer more than native processes here: the CPU scheduler (CFS group scheduling) weighs a "
    "container's cgroup (and a native cell's, when it has limits) as one entity against each busy host process, "
    "while an unlimited native workload's threads each compete on their own (4 fio jobs on zram beside one CPU "
    "hog on this 2-core host: 71k IOPS in one cgroup, 168k as separate tasks)"
)


def contended_limit(ncpu: int) -> float:
    """Cores that other processes may keep busy before a trial is contended."""
    return max(CONTENDED_MIN_CORES, CONTENDED_HOST_SHARE * ncpu)


def contended(outside_cores: float, ncpu: int, top: dict[str, float]) -> Check:
    """Processes outside the cell used the CPU during the trial: its ratio to a baseline measured on a
    quieter host says more about the host than about the layers. ``top``: command → cores it used."""
    limit = contended_limit(ncpu)
    if outside_cores < limit:
        return Check("contended", "pass", f"other processes used {outside_cores:.2f} of {ncpu} cores")
    names = ", ".join(f"{comm} {cores:.2f}" for comm, cores in sorted(top.items(), key=lambda kv: -kv[1])[:3])
    return Check(
        "contended",
        "flag",
        f"other processes used {outside_cores:.2f} of {ncpu} cores during the trial ({names}): the host was busy, "
        f"so this trial's ratio to its baseline is not to be trusted. {GROUP_SCHEDULING}. "
        "Rerun on a quiet host, or pin the cell and the rest apart (cpuset).",
    )


def clock_bound(cells: list[str], total: int, resolution_s: float | None) -> Check:
    """``cells``: the IOzone cells ("64k/4k read") that took no longer than the clock's resolution."""
    if resolution_s is None:
        return Check("clock-bound", "skip", "IOzone did not print its clock's resolution")
    if not cells:
        return Check("clock-bound", "pass", f"every one of {total} cells took longer than {resolution_s * 1e6:g} µs")
    shown = ", ".join(cells[:3]) + (f" and {len(cells) - 3} more" if len(cells) > 3 else "")
    return Check(
        "clock-bound",
        "flag",
        f"{len(cells)} of {total} cells ({shown}) ran within IOzone's {resolution_s * 1e6:g} µs clock: their kB/s is "
        "the file size over the resolution, a ceiling, not a speed, and a ratio between two such cells is 1 by "
        "construction. Use larger file sizes.",
    )


EMULATED = (
    "the guest ran under emulation (TCG: no usable KVM here), on a CPU 10-50x slower than the host's: "
    "a functional result, not comparable with native or container cells"
)


def emulated(accel: str | None) -> list[Check]:
    """``not-comparable`` for a trial that ran in an emulated guest; nothing otherwise."""
    return [Check("not-comparable", "flag", EMULATED)] if accel == "tcg" else []
