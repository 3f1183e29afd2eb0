"""Read a container's resource limits back from its cgroup files (cgroup v1 and v2).

Docker accepting a limit is not the kernel enforcing it: the limit-applied
check compares what the spec asked with what these files say.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
UNLIMITED = 2**62  # v1 reports "no limit" as a huge page-rounded number


def container_dirs(parent: str, container_id: str, root: Path = CGROUP_ROOT) -> dict[str, Path]:
    """Controller name → the container's cgroup directory (v1); {"unified": dir} on v2."""
    rel = f"{parent.strip('/')}/{container_id}"
    if (root / "cgroup.controllers").exists():
        return {"unified": root / rel}
    return {c: root / c / rel for c in ("cpuset", "cpu", "cpuacct", "memory", "blkio") if (root / c).exists()}


def read_limits(dirs: dict[str, Path], device: str) -> dict[str, object]:
    """What the kernel enforces, in the units of ``Limits``."""
    found: dict[str, object] = {}
    if "cpuset" in dirs:
        found["cpuset"] = _read(dirs["cpuset"] / "cpuset.cpus")
    if "memory" in dirs:
        limit = int(_read(dirs["memory"] / "memory.limit_in_bytes") or UNLIMITED)
        found["memory"] = None if limit >= UNLIMITED else limit
    if "cpu" in dirs:
        quota = int(_read(dirs["cpu"] / "cpu.cfs_quota_us") or -1)
        period = int(_read(dirs["cpu"] / "cpu.cfs_period_us") or 100000)
        found["cpus"] = None if quota < 0 else quota / period
    if "blkio" in dirs:
        majmin = _majmin(device)
        for key, name in (("read_bps", "read_bps_device"), ("write_bps", "write_bps_device")):
            found[key] = _device_rate(_read(dirs["blkio"] / f"blkio.throttle.{name}"), majmin)
    return found


def mismatches(asked: dict[str, object], enforced: dict[str, object]) -> list[str]:
    """Each limit the spec set that the kernel does not enforce as asked."""
    out = []
    for key, want in asked.items():
        if want is None or key not in enforced:
            continue
        got = enforced[key]
        same = abs(float(got) - float(want)) < 1e-6 * max(1.0, float(want)) if _number(got, want) else got == want
        if not same:
            out.append(f"{key}: asked {want}, cgroup says {got}")
    return out


def remove_parent(parent: str, root: Path = CGROUP_ROOT) -> None:
    """Remove the empty cgroup directories a private daemon left under ``parent``, and ``parent``'s
    own top directory when no other daemon still uses it."""
    top = parent.strip("/").split("/")[0]
    bases = [root] if (root / "cgroup.controllers").exists() else [p for p in root.glob("*") if p.is_dir()]
    for base in bases:
        deepest_first = sorted((base / parent.strip("/")).glob("**/"), key=lambda p: -len(p.parts))
        for d in [*deepest_first, base / top]:
            with contextlib.suppress(OSError):  # not empty: another daemon's, or still in use
                d.rmdir()


def _number(a: object, b: object) -> bool:
    return isinstance(a, int | float) and isinstance(b, int | float)


def _device_rate(text: str, majmin: str) -> int | None:
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == majmin:
            return int(parts[1])
    return None


def _majmin(device: str) -> str:
    st = os.stat(device)
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""
