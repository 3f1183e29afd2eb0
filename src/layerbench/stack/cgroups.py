"""Read a container's resource limits back from its cgroup files (cgroup v1 and v2).

Docker accepting a limit is not the kernel enforcing it: the limit-applied
check compares what the spec asked with what these files say. A limit whose
file cannot be read is left out of what was read, so the check can say it
could not see instead of passing on nothing.

A container's cgroup is found from its init process (/proc/<pid>/cgroup), not
from a path guessed from the daemon's options: that holds for the cgroupfs
and the systemd drivers alike, on v1, v2 and hybrid hosts.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
UNLIMITED = 2**62  # v1 reports "no limit" as a huge page-rounded number
PAGE = os.sysconf("SC_PAGE_SIZE")
V1_CONTROLLERS = ("cpuset", "cpu", "cpuacct", "memory", "blkio")
CPUS_TOLERANCE = 1e-3  # cpu.max holds microseconds of quota: 1.5 CPUs is 150000/100000 exactly


def is_v2(root: Path = CGROUP_ROOT) -> bool:
    """A pure cgroup-v2 host (the unified hierarchy at the root, holding the controllers)."""
    return (root / "cgroup.controllers").exists()


def version(root: Path = CGROUP_ROOT) -> int:
    return 2 if is_v2(root) else 1


def process_dirs(pid: int, root: Path = CGROUP_ROOT, proc: Path = Path("/proc")) -> dict[str, Path]:
    """Controller name → the process's cgroup directory (v1); {"unified": dir} on v2."""
    try:
        text = (proc / str(pid) / "cgroup").read_text()
    except OSError:
        return {}
    return parse_proc_cgroup(text, root)


def parse_proc_cgroup(text: str, root: Path = CGROUP_ROOT) -> dict[str, Path]:
    """/proc/<pid>/cgroup lines (``id:controllers:path``) into directories under ``root``."""
    v2 = is_v2(root)
    found: dict[str, Path] = {}
    for line in text.splitlines():
        hid, controllers, path = line.split(":", 2)
        rel = path.lstrip("/")
        if v2:
            if hid == "0" and controllers == "":
                return {"unified": root / rel}
            continue
        for name in controllers.split(","):
            if name in V1_CONTROLLERS:
                # Mounted one per controller here, co-mounted as cpu,cpuacct on other hosts.
                mount = root / name if (root / name).is_dir() else root / controllers
                found[name] = mount / rel
    return found


def read_limits(dirs: dict[str, Path], device: str) -> dict[str, object]:
    """What the kernel enforces, in the units of ``Limits``; a limit that cannot be read is absent.

    ``device`` is the block device's ``major:minor`` (see ``majmin``): block-I/O limits are per device.
    """
    if "unified" in dirs:
        return _read_v2(dirs["unified"], device)
    return _read_v1(dirs, device)


def _read_v1(dirs: dict[str, Path], majmin: str) -> dict[str, object]:
    found: dict[str, object] = {}
    if "cpuset" in dirs:
        cpus = _read(dirs["cpuset"] / "cpuset.effective_cpus") or _read(dirs["cpuset"] / "cpuset.cpus")
        _put(found, "cpuset", cpus or None)
    if "memory" in dirs:
        limit = _int(_read(dirs["memory"] / "memory.limit_in_bytes"))
        if limit is not None:  # read: a number, or "no limit" (None)
            found["memory"] = None if limit >= UNLIMITED else limit
    if "cpu" in dirs:
        quota = _int(_read(dirs["cpu"] / "cpu.cfs_quota_us"))
        period = _int(_read(dirs["cpu"] / "cpu.cfs_period_us"))
        if quota is not None and period:
            found["cpus"] = None if quota < 0 else quota / period
    if "blkio" in dirs:
        for key, name in (("read_bps", "read_bps_device"), ("write_bps", "write_bps_device")):
            text = _read(dirs["blkio"] / f"blkio.throttle.{name}")
            if text is not None:
                found[key] = _device_rate(text, majmin)
    return found


def _read_v2(d: Path, majmin: str) -> dict[str, object]:
    found: dict[str, object] = {}
    _put(found, "cpuset", _read(d / "cpuset.cpus.effective") or None)
    memory = _read(d / "memory.max")
    if memory is not None:
        found["memory"] = None if memory == "max" else _int(memory)
    cpu = _read(d / "cpu.max")
    if cpu is not None:
        quota, _, period = cpu.partition(" ")
        found["cpus"] = None if quota == "max" else int(quota) / int(period or 100000)
    io = _read(d / "io.max")
    if io is not None:
        rates = io_max(io).get(majmin, {})
        found["read_bps"] = rates.get("rbps")
        found["write_bps"] = rates.get("wbps")
    return found


def io_max(text: str) -> dict[str, dict[str, int]]:
    """io.max lines (``254:0 rbps=10485760 wbps=max riops=max wiops=max``): device → its set limits."""
    out: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        majmin, *pairs = line.split()
        kv = dict(p.split("=", 1) for p in pairs if "=" in p)
        out[majmin] = {k: int(v) for k, v in kv.items() if v != "max"}
    return out


def verdict(asked: dict[str, object], enforced: dict[str, object]) -> tuple[str, str]:
    """The limit-applied check: ("pass" | "flag" | "skip", what was read back or why not)."""
    wanted = {k: v for k, v in asked.items() if v is not None}
    unseen = [k for k in wanted if k not in enforced]
    wrong = mismatches(wanted, enforced)
    if wrong:
        return "flag", "; ".join(wrong)
    if unseen:
        seen = ", ".join(f"{k}={_show(enforced[k])}" for k in wanted if k in enforced)
        why = f"cannot read {', '.join(unseen)} back from the container's cgroup"
        return "skip", f"{why}{f' (read back: {seen})' if seen else ''}: unverified, not passed"
    return "pass", "read back from the cgroup: " + ", ".join(f"{k}={_show(enforced[k])}" for k in wanted)


def mismatches(asked: dict[str, object], enforced: dict[str, object]) -> list[str]:
    """Each limit the spec set that the kernel does not enforce as asked (unreadable ones: see ``verdict``)."""
    out = []
    for key, want in asked.items():
        if want is None or key not in enforced:
            continue
        got = enforced[key]
        if not same_limit(key, want, got):
            out.append(f"{key}: asked {_show(want)}, cgroup says {_show(got)}")
    return out


def same_limit(key: str, want: object, got: object) -> bool:
    if got is None:
        return False
    if key == "cpuset":
        return cpu_list(str(want)) == cpu_list(str(got))
    if key == "memory":
        # The kernel rounds a memory limit down to whole pages (an eighth of 4 GiB is not one).
        return isinstance(got, int) and isinstance(want, int) and abs(got - want) < PAGE
    if key == "cpus":
        return isinstance(got, int | float) and isinstance(want, int | float) and abs(got - want) <= CPUS_TOLERANCE
    return got == want


def cpu_list(text: str) -> frozenset[int]:
    """A cpuset list (``0-2,4``) as its CPUs, so "0,1" and "0-1" compare equal."""
    cpus: set[int] = set()
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return frozenset(cpus)


def remove_parent(parent: str, root: Path = CGROUP_ROOT) -> None:
    """Remove the empty cgroup directories a private daemon left under ``parent``, and ``parent``'s
    own top directory when no other daemon still uses it."""
    top = parent.strip("/").split("/")[0]
    bases = [root] if is_v2(root) else [p for p in root.glob("*") if p.is_dir()]
    for base in bases:
        deepest_first = sorted((base / parent.strip("/")).glob("**/"), key=lambda p: -len(p.parts))
        for d in [*deepest_first, base / top]:
            with contextlib.suppress(OSError):  # not empty: another daemon's, or still in use
                d.rmdir()


def _put(found: dict[str, object], key: str, value: object) -> None:
    """Record a value that was read (None from an unreadable file stays out: it was not seen)."""
    if value is not None:
        found[key] = value


def _show(value: object) -> str:
    if isinstance(value, int) and value >= 2**20:
        return f"{value / 2**20:g}MiB"
    return str(value)


def _device_rate(text: str, majmin: str) -> int | None:
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == majmin:
            return int(parts[1])
    return None


def majmin(device: str) -> str:
    """``device``'s major:minor; "" for no device on this host (a claim's), which no per-device limit names."""
    if not device:
        return ""
    st = os.stat(device)
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and text.lstrip("-").isdigit() else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None
