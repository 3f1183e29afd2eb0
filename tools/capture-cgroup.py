"""Capture a limited container's cgroup files as test data for the cgroup reader's unit tests.

Usage (as root, from the checkout, with the project's venv):
    .venv/bin/python tools/capture-cgroup.py tests/data/cgroup/v<N>

Builds a real stack with layerbench's own code (loop file, ext4, private dockerd, one volume container
with the limits below), copies the limit and usage files of the container's cgroup directories, and
writes `device` (the loop device's major:minor the block-I/O limit names) and `proc-cgroup` (a real
/proc/<pid>/cgroup of the container's init). Run it once on a cgroup-v1 host and once in the test VM
(cgroup v2, systemd) to refresh tests/data/cgroup/.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from layerbench import proc
from layerbench.spec.models import Limits, StackSpec
from layerbench.stack.build import single
from layerbench.stack.cgroups import majmin
from layerbench.stack.ledger import Ledger
from layerbench.stack.target import BuildContext

LIMITS = Limits(cpuset="0", cpus=1.5, memory="256MiB", read_bps="64MiB", write_bps="32MiB")
KEPT = (
    "cgroup.controllers", "cpuset.cpus", "cpuset.effective_cpus", "cpuset.cpus.effective",
    "memory.limit_in_bytes", "memory.max", "memory.usage_in_bytes", "memory.current",
    "cpu.cfs_quota_us", "cpu.cfs_period_us", "cpu.max", "cpu.stat", "cpuacct.usage",
    "blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device", "blkio.throttle.io_service_bytes",
    "io.max", "io.stat",
)  # fmt: skip


def main(out: Path) -> None:
    stack = StackSpec.model_validate(
        {
            "device": {"kind": "loop", "size": "256MiB"},
            "filesystem": "ext4",
            "engine": "docker:overlay2",
            "placement": "volume",
            "limits": LIMITS,
        }
    )
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        work.mkdir(mode=0o700)
        ctx = BuildContext(work, Ledger(Path(tmp) / "ledger.db", "capture"), "capture", proc.run)
        with single(stack, ctx, 16 * 2**20) as target:
            assert not isinstance(target, list)
            target.run(["sleep", "0"], 30).check()
            for controller, directory in target.info["cgroup"].items():
                _copy(Path(directory), out / controller)
            (out / "device").write_text(majmin(target.device.path) + "\n")
            some_dir = Path(next(iter(target.info["cgroup"].values())))
            pid = (some_dir / "cgroup.procs").read_text().split()[0]  # the container's init, seen from the host
            (out / "proc-cgroup").write_text(Path(f"/proc/{pid}/cgroup").read_text())
    print(f"captured {sorted(p.name for p in out.iterdir())} into {out}")


def _copy(src: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for name in KEPT:
        if (src / name).is_file():  # kernel files: read them, their size says nothing
            (dest / name).write_text((src / name).read_text())


if __name__ == "__main__":
    main(Path(sys.argv[1]))
