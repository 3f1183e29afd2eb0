"""A cgroup of layerbench's own for a native cell, so that a native stack's limits are applied too.

A native cell with limits runs its commands inside /layerbench/native-<id> (every v1 hierarchy that
has a controller for a limit, or the v2 unified one), with the limits written there, the same files
a container's limits land in. That separates what a container costs from what its limit costs: native
and container cells run under the same kernel limits, and both are read back by the same reader.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from layerbench.errors import PrerequisiteError
from layerbench.spec.models import Limits
from layerbench.stack import cgexec, cgroups
from layerbench.stack.ledger import tracked
from layerbench.stack.target import BuildContext

PARENT = "layerbench"
RMDIR_TIMEOUT_S = 10.0
V1_FOR = {"cpuset": "cpuset", "cpus": "cpu", "memory": "memory", "read_bps": "blkio", "write_bps": "blkio"}
V2_CONTROLLERS = {"cpuset": "cpuset", "cpus": "cpu", "memory": "memory", "read_bps": "io", "write_bps": "io"}
# Joined whatever the limits: the monitor reads the cell's own CPU time, memory and I/O from them.
V1_ACCOUNTING = ("cpuacct", "memory", "blkio")
V2_ACCOUNTING = ("cpu", "memory", "io")


@dataclass(frozen=True)
class CellCgroup:
    dirs: dict[str, Path]  # as cgroups.process_dirs gives them: controller → dir, or {"unified": dir}

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """``argv`` started inside this cgroup (see cgexec.py)."""
        procs = [str(d / "cgroup.procs") for d in dict.fromkeys(self.dirs.values())]
        return [sys.executable, "-I", cgexec.__file__, *procs, "--", *[str(a) for a in argv]]


@contextmanager
def cell_cgroup(
    limits: Limits, majmin: str, ctx: BuildContext, root: Path = cgroups.CGROUP_ROOT
) -> Iterator[CellCgroup]:
    name = f"native-{uuid.uuid4().hex[:8]}"
    asked = limits.model_dump(exclude_none=True)

    def create(rid: int) -> CellCgroup:
        dirs = _make(name, asked, root, lambda d: ctx.ledger.update(rid, dirs={k: str(v) for k, v in d.items()}))
        _write(dirs, limits, majmin)
        return CellCgroup(dirs)

    def remove(group: CellCgroup) -> None:
        remove_dirs(list(group.dirs.values()))

    with tracked(ctx.ledger, "cgroup", f"/{PARENT}/{name}", create, remove) as group:
        yield group


def _make(
    name: str, asked: dict[str, object], root: Path, record: Callable[[dict[str, Path]], None]
) -> dict[str, Path]:
    """Make the cell's directories; ``record`` hears of them first, so cleanup finds even a half-made set."""
    if cgroups.is_v2(root):
        wanted = sorted({V2_CONTROLLERS[k] for k in asked} | set(V2_ACCOUNTING))
        record({"unified": root / PARENT / name})
        for level in (root, root / PARENT):
            level.mkdir(exist_ok=True)
            _enable(level, wanted)
        (root / PARENT / name).mkdir()
        return {"unified": root / PARENT / name}
    accounting = {c for c in V1_ACCOUNTING if (root / c).is_dir()}
    controllers = sorted({V1_FOR[k] for k in asked} | accounting)
    missing = [c for c in controllers if not (root / c).is_dir()]
    if missing:
        raise PrerequisiteError(
            f"no cgroup v1 {', '.join(missing)} hierarchy under {root}: the limits cannot be applied"
        )
    dirs = {c: root / c / PARENT / name for c in controllers}
    record(dirs)
    for controller, cell in dirs.items():
        cell.parent.mkdir(exist_ok=True)
        cell.mkdir(exist_ok=True)  # cpu and cpuacct are one directory where co-mounted
        if controller == "cpuset":  # a v1 cpuset takes no process until it has CPUs and memory nodes
            for d in (cell.parent, cell):
                for key in ("cpuset.cpus", "cpuset.mems"):
                    if not _read(d / key):
                        (d / key).write_text((d.parent / key).read_text())
    return dirs


def _enable(level: Path, controllers: list[str]) -> None:
    have = set((level / "cgroup.subtree_control").read_text().split())
    for c in controllers:
        if c not in have:
            (level / "cgroup.subtree_control").write_text(f"+{c}")


def _write(dirs: dict[str, Path], limits: Limits, majmin: str) -> None:
    if "unified" in dirs:
        d = dirs["unified"]
        if limits.cpuset:
            (d / "cpuset.cpus").write_text(limits.cpuset)
        if limits.cpus:
            (d / "cpu.max").write_text(f"{round(limits.cpus * 100000)} 100000")
        if limits.memory:
            (d / "memory.max").write_text(str(int(limits.memory)))
        rates = {"rbps": limits.read_bps, "wbps": limits.write_bps}
        if any(rates.values()):
            pairs = " ".join(f"{k}={int(v)}" for k, v in rates.items() if v)
            (d / "io.max").write_text(f"{majmin} {pairs}")
        return
    if limits.cpuset:
        (dirs["cpuset"] / "cpuset.cpus").write_text(limits.cpuset)
    if limits.cpus:
        (dirs["cpu"] / "cpu.cfs_period_us").write_text("100000")
        (dirs["cpu"] / "cpu.cfs_quota_us").write_text(str(round(limits.cpus * 100000)))
    if limits.memory:
        (dirs["memory"] / "memory.limit_in_bytes").write_text(str(int(limits.memory)))
    for value, name in ((limits.read_bps, "read_bps_device"), (limits.write_bps, "write_bps_device")):
        if value:
            (dirs["blkio"] / f"blkio.throttle.{name}").write_text(f"{majmin} {int(value)}")


def remove_dirs(dirs: list[Path]) -> None:
    """Kill what still runs in the cell's cgroups (a dead run's fio), then remove them and, once empty,
    the shared parent."""
    for d in dirs:
        with contextlib.suppress(OSError, ValueError):
            for pid in (d / "cgroup.procs").read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
    for d in dirs:
        _rmdir_when_empty(d)
        with contextlib.suppress(OSError):  # another cell's or daemon's still: leave it
            d.parent.rmdir()


def _rmdir_when_empty(d: Path) -> None:
    """A killed process leaves its cgroup a moment after it died: poll the kernel's answer, bounded."""
    deadline = time.monotonic() + RMDIR_TIMEOUT_S
    while True:
        try:
            d.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except FileNotFoundError:  # made by the kernel with the directory; a stand-in tree has none
        return ""
