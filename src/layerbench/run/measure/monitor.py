"""Sampling the host while a trial runs: CPU, memory, block devices, cgroups.

A background thread reads /proc and /sys once per interval. Parsing is split
into pure functions over the files' text, so it is tested on captured text.
The totals over the whole trial (bytes each device really moved) feed the
device-accounting check: if fio says it read 1 GiB and the disk under the
loop device read 10 MiB, the page cache or a sparse file answered, not the disk.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

SECTOR = 512  # /sys/block/*/stat counts 512-byte sectors whatever the device's block size


@dataclass(frozen=True)
class Point:
    t: float  # seconds since the monitor started
    series: str  # e.g. "cpu.iowait", "disk.vda.read_bps", "cgroup.<id>.cpu_cores"
    value: float
    unit: str


@dataclass(frozen=True)
class CpuTimes:
    user: int
    system: int
    idle: int
    iowait: int
    total: int


@dataclass(frozen=True)
class DiskCounters:
    reads: int
    read_bytes: int
    writes: int
    write_bytes: int
    busy_ms: int


def parse_proc_stat(text: str) -> CpuTimes:
    fields = [int(x) for x in text.splitlines()[0].split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, _steal = (fields + [0] * 8)[:8]
    return CpuTimes(user + nice, system + irq + softirq, idle, iowait, sum(fields[:8]))


def parse_per_cpu(text: str) -> dict[str, CpuTimes]:
    """Each core's line of /proc/stat ("cpu0", "cpu1", ...): one saturated core hides in the host's mean."""
    return {line.split()[0]: parse_proc_stat(line) for line in text.splitlines() if re.match(r"cpu\d+ ", line)}


@dataclass(frozen=True)
class ProcStat:
    pid: int
    comm: str
    ppid: int
    kthread: bool  # a kernel thread (loop workers, kworkers): the kernel's work, often the cell's own I/O
    ticks: int  # user + system time, in clock ticks


PF_KTHREAD = 0x00200000


def parse_pid_stat(text: str) -> ProcStat:
    """/proc/<pid>/stat; the command name may hold spaces and parentheses, so split at its last ')'."""
    head, _, rest = text.rpartition(")")
    pid, _, comm = head.partition(" (")
    f = rest.split()  # f[0] is field 3 (state)
    return ProcStat(int(pid), comm, int(f[1]), bool(int(f[6]) & PF_KTHREAD), int(f[11]) + int(f[12]))


def descendants(procs: dict[int, ProcStat], root: int) -> set[int]:
    """``root`` and every process below it."""
    children: dict[int, list[int]] = {}
    for p in procs.values():
        children.setdefault(p.ppid, []).append(p.pid)
    out, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in out:
            out.add(pid)
            todo += children.get(pid, [])
    return out


def outside_ticks(prev: dict[int, ProcStat], cur: dict[int, ProcStat], cell: set[int]) -> dict[str, int]:
    """CPU ticks user-space processes outside the cell used between two snapshots, per command name.

    Kernel threads are left out: the loop device's workers and the block layer's kworkers do the
    cell's own I/O. A process new since ``prev`` used all its time in between; one that ended is
    missed (an undercount, never an overcount).
    """
    used: dict[str, int] = {}
    for pid, p in cur.items():
        if pid in cell or p.kthread:
            continue
        before = prev[pid].ticks if pid in prev and prev[pid].comm == p.comm else 0
        if p.ticks > before:
            used[p.comm] = used.get(p.comm, 0) + p.ticks - before
    return used


def parse_disk_stat(text: str) -> DiskCounters:
    f = [int(x) for x in text.split()]
    return DiskCounters(reads=f[0], read_bytes=f[2] * SECTOR, writes=f[4], write_bytes=f[6] * SECTOR, busy_ms=f[9])


def parse_meminfo(text: str) -> dict[str, int]:
    out = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts:
            out[key] = int(parts[0]) * (1024 if len(parts) > 1 else 1)
    return out


def cpu_shares(a: CpuTimes, b: CpuTimes) -> dict[str, float]:
    total = max(b.total - a.total, 1)
    return {
        "cpu.user": 100 * (b.user - a.user) / total,
        "cpu.system": 100 * (b.system - a.system) / total,
        "cpu.iowait": 100 * (b.iowait - a.iowait) / total,
        "cpu.idle": 100 * (b.idle - a.idle) / total,
    }


def disk_rates(name: str, a: DiskCounters, b: DiskCounters, seconds: float) -> dict[str, float]:
    dt = max(seconds, 1e-6)
    return {
        f"disk.{name}.read_bps": (b.read_bytes - a.read_bytes) / dt,
        f"disk.{name}.write_bps": (b.write_bytes - a.write_bytes) / dt,
        f"disk.{name}.read_iops": (b.reads - a.reads) / dt,
        f"disk.{name}.write_iops": (b.writes - a.writes) / dt,
        f"disk.{name}.util": min(100.0, 100 * (b.busy_ms - a.busy_ms) / (dt * 1000)),
    }


UNITS = {"read_bps": "B/s", "write_bps": "B/s", "read_iops": "IO/s", "write_iops": "IO/s", "util": "%"}


def devices_beneath(dev_path: str, sys_root: Path = Path("/sys")) -> list[str]:
    """The block device and, for a loop device, the disk its backing file lives on; for an NVMe
    multipath head (nvme0n1 of NVMe over Fabrics), its one path (nvme0c0n1).

    Kernels before 6.3 count no I/O on a multipath head: its path, a hidden disk that /sys/class/block
    still lists, does (seen in Debian 12's 6.1 with NVMe/TCP: the head read 0 MiB of fio's 47).
    """
    if not dev_path:  # no device on this host (a claim of a cluster's StorageClass): nothing to watch
        return []
    name = os.path.basename(dev_path)
    names = [name]
    paths = nvme_paths(name, sys_root)
    if len(paths) == 1:  # with several, each carries part of the I/O: no one device is beneath
        names.append(paths[0])
    backing = sys_root / "block" / name / "loop" / "backing_file"
    if backing.exists():
        st = os.stat(backing.read_text().strip())
        link = sys_root / "dev" / "block" / f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
        if link.exists():
            names.append(link.resolve().name)
    return names


def nvme_paths(name: str, sys_root: Path = Path("/sys")) -> list[str]:
    """The paths of NVMe multipath head ``name``: nvme<S>n<N>'s are nvme<S>c<controller>n<N>."""
    head = re.fullmatch(r"nvme(\d+)n(\d+)", name)
    if head is None:
        return []
    path = re.compile(rf"nvme{head[1]}c\d+n{head[2]}")
    found = (sys_root / "class" / "block").glob(f"nvme{head[1]}c*n{head[2]}")
    return sorted(p.name for p in found if path.fullmatch(p.name))


@dataclass(frozen=True)
class CgroupCounters:
    cpu_ns: int
    memory: int
    io_read: int
    io_write: int


def read_cgroup(dirs: dict[str, Path]) -> CgroupCounters:
    """A container's CPU time, memory and block I/O, from cgroup v1 controllers or the v2 unified dir."""
    if "unified" in dirs:
        d = dirs["unified"]
        cpu = _kv(_text(d / "cpu.stat")).get("usage_usec", 0) * 1000
        io = [_kv(" ".join(line.split()[1:]).replace("=", " ")) for line in _text(d / "io.stat").splitlines()]
        return CgroupCounters(
            cpu,
            int(_text(d / "memory.current") or 0),
            sum(x.get("rbytes", 0) for x in io),
            sum(x.get("wbytes", 0) for x in io),
        )
    acct = dirs.get("cpuacct", dirs.get("cpu"))  # co-mounted as cpu,cpuacct on some hosts
    cpu = int(_text(acct / "cpuacct.usage") or 0) if acct else 0
    memory = int(_text(dirs["memory"] / "memory.usage_in_bytes") or 0) if "memory" in dirs else 0
    io = _blkio_totals(_text(dirs["blkio"] / "blkio.throttle.io_service_bytes")) if "blkio" in dirs else (0, 0)
    return CgroupCounters(cpu, memory, *io)


def _blkio_totals(text: str) -> tuple[int, int]:
    read = write = 0
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "Read":
            read += int(parts[2])
        elif len(parts) == 3 and parts[1] == "Write":
            write += int(parts[2])
    return read, write


def _kv(text: str) -> dict[str, int]:
    words = text.split()
    return {k: int(v) for k, v in zip(words[::2], words[1::2], strict=False) if v.lstrip("-").isdigit()}


def _text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


@dataclass(frozen=True)
class Snapshot:
    at: float
    disks: dict[str, DiskCounters]
    cpu: CpuTimes
    mem: dict[str, int]
    cgroups: dict[str, CgroupCounters]
    cores: dict[str, CpuTimes]
    procs: dict[int, ProcStat]


def read_procs(proc_root: Path) -> dict[int, ProcStat]:
    """Every process's stat, once per sample while a trial runs: a listing and one read each, no glob (which
    stats every entry) and no text layer, about 60% of the CPU (a sample 2.3 against 3.9 ms with 114 processes here)."""
    procs = {}
    root = os.fspath(proc_root)
    for name in os.listdir(root):
        if not name.isdigit():
            continue
        try:
            with open(f"{root}/{name}/stat", "rb") as f:
                text = f.read().decode(errors="replace")
        except OSError:  # a process may end between the listing and the read
            continue
        if text:
            p = parse_pid_stat(text)
            procs[p.pid] = p
    return procs


def cgroup_pids(dirs: dict[str, Path]) -> set[int]:
    """The processes in a container's cgroup (any controller's cgroup.procs lists them all)."""
    for d in dirs.values():
        text = _text(d / "cgroup.procs")
        if text:
            return {int(x) for x in text.split()}
    return set()


class Monitor:
    """Samples every ``interval`` seconds between __enter__ and __exit__.

    ``cgroup`` (controller → directory) adds the container's own CPU (cores
    used), memory and block I/O to the host's series; ``cgroups`` does so for
    several containers, each under its name ("container.i1.cpu_cores").

    Each core's busy share is a series of its own ("cpu.cpu3.busy"), and so is
    the CPU that processes outside the cell used ("cpu.outside", cores): the
    cell is this process and its descendants (the workload natively, the
    ``docker exec`` clients) and the processes of the containers' cgroups;
    ``outside`` totals the latter per command name over the whole trial.

    ``count_from`` (seconds after entering): ``totals`` counts each device's bytes from then on, not from
    the start: fio's ramp, which fio's own byte counts leave out, is left out of the device's too, so the
    two compare over one window (the device-accounting check).

    ``on_point`` gets each point (series, value, unit) as it is taken: `run --metrics-port` serves the
    latest of each while the trial runs.
    """

    def __init__(
        self,
        devices: list[str],
        interval: float = 1.0,
        sys_root: Path = Path("/sys"),
        proc_root: Path = Path("/proc"),
        cgroup: dict[str, Path] | None = None,
        cgroups: dict[str, dict[str, Path]] | None = None,
        count_from: float = 0.0,
        on_point: Callable[[str, float, str], None] | None = None,
    ) -> None:
        self.devices = devices
        self.on_point = on_point
        self.count_from = count_from
        self._mark: dict[str, DiskCounters] | None = None  # the devices' counters at count_from
        self._marker = threading.Timer(count_from, self._take_mark)
        self.interval = interval
        self.sys_root = sys_root
        self.proc_root = proc_root
        self.cgroups = {**({"": cgroup} if cgroup else {}), **(cgroups or {})}
        self.points: list[Point] = []
        self.totals: dict[str, DiskCounters] = {}
        self.outside: dict[str, float] = {}  # command name → CPU seconds it used outside the cell
        self.cell_root = os.getpid()
        self.tick_s = 1 / os.sysconf("SC_CLK_TCK")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="layerbench-monitor", daemon=True)

    def __enter__(self) -> Monitor:
        self._t0 = time.monotonic()
        self._first = self._snapshot()
        self._thread.start()
        if self.count_from > 0:
            self._marker.start()
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
        self._marker.cancel()
        if self.count_from > 0:
            self._marker.join()
        last = self._snapshot()
        start = self._mark if self._mark is not None else self._first.disks  # a trial over before its ramp ended
        self.totals = {n: _delta(start[n], last.disks[n]) for n in self.devices if n in last.disks and n in start}

    def _take_mark(self) -> None:
        self._mark = self._disks()

    def _loop(self) -> None:
        prev = self._first
        while not self._stop.wait(self.interval):
            cur = self._snapshot()
            taken = len(self.points)
            self._emit(prev, cur)
            prev = cur
            if self.on_point is not None:
                for p in self.points[taken:]:
                    self.on_point(p.series, p.value, p.unit)

    def _disks(self) -> dict[str, DiskCounters]:
        disks = {}
        for name in self.devices:
            path = self.sys_root / "class" / "block" / name / "stat"
            if path.exists():
                disks[name] = parse_disk_stat(path.read_text())
        return disks

    def _snapshot(self) -> Snapshot:
        disks = self._disks()
        text = (self.proc_root / "stat").read_text()
        mem = parse_meminfo((self.proc_root / "meminfo").read_text())
        groups = {name: read_cgroup(dirs) for name, dirs in self.cgroups.items()}
        procs = read_procs(self.proc_root)
        return Snapshot(time.monotonic(), disks, parse_proc_stat(text), mem, groups, parse_per_cpu(text), procs)

    def _emit(self, prev: Snapshot, cur: Snapshot) -> None:
        t, seconds = cur.at - self._t0, max(cur.at - prev.at, 1e-6)
        for series, value in cpu_shares(prev.cpu, cur.cpu).items():
            self.points.append(Point(t, series, value, "%"))
        for core, b in cur.cores.items():
            if core in prev.cores:
                shares = cpu_shares(prev.cores[core], b)
                self.points.append(Point(t, f"cpu.{core}.busy", shares["cpu.user"] + shares["cpu.system"], "%"))
        self._emit_outside(t, seconds, prev, cur)
        used = cur.mem.get("MemTotal", 0) - cur.mem.get("MemAvailable", 0)
        self.points.append(Point(t, "mem.used", float(used), "B"))
        for name in cur.disks:
            if name in prev.disks:
                for series, value in disk_rates(name, prev.disks[name], cur.disks[name], seconds).items():
                    self.points.append(Point(t, series, value, UNITS[series.rsplit(".", 1)[1]]))
        for name, b in cur.cgroups.items():
            a = prev.cgroups.get(name)
            if a is None:
                continue
            prefix = f"container.{name}." if name else "container."
            self.points += [
                Point(t, f"{prefix}cpu_cores", (b.cpu_ns - a.cpu_ns) / 1e9 / seconds, "cores"),
                Point(t, f"{prefix}memory", float(b.memory), "B"),
                Point(t, f"{prefix}read_bps", (b.io_read - a.io_read) / seconds, "B/s"),
                Point(t, f"{prefix}write_bps", (b.io_write - a.io_write) / seconds, "B/s"),
            ]

    def _emit_outside(self, t: float, seconds: float, prev: Snapshot, cur: Snapshot) -> None:
        cell = descendants(cur.procs, self.cell_root)
        for dirs in self.cgroups.values():
            cell |= cgroup_pids(dirs)
        used = outside_ticks(prev.procs, cur.procs, cell)
        for comm, ticks in used.items():
            self.outside[comm] = self.outside.get(comm, 0.0) + ticks * self.tick_s
        self.points.append(Point(t, "cpu.outside", sum(used.values()) * self.tick_s / seconds, "cores"))


def _delta(a: DiskCounters, b: DiskCounters) -> DiskCounters:
    return DiskCounters(
        b.reads - a.reads,
        b.read_bytes - a.read_bytes,
        b.writes - a.writes,
        b.write_bytes - a.write_bytes,
        b.busy_ms - a.busy_ms,
    )
