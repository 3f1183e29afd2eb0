"""The device's own bandwidth, measured, for the BW and ALL profiles when the spec gives none.

Seed 000 divided "the disk bandwidth" among its containers; layerbench measures
it on the filesystem under test, once per device: a file written in full, then
read, in 1 MiB direct I/O at a queue depth of 16, a few seconds each way.
"""

from __future__ import annotations

from layerbench.spec.models import FioWorkload
from layerbench.stack.placement import host_dir
from layerbench.stack.target import BuildContext, Mount
from layerbench.workloads import fio

CALIBRATION_S = 3.0
SIZE = 256 * 2**20


def device_bandwidth(mount: Mount, ctx: BuildContext) -> tuple[int, int]:
    """(read, write) bytes per second of the device under ``mount``; measured once, kept in its info."""
    known = mount.device.info.get("bandwidth")
    if known:
        return int(known[0]), int(known[1])
    assert mount.mountpoint is not None  # a server stack always has a filesystem
    with host_dir(mount.mountpoint / "lb-calibrate", ctx) as path:
        ctx.runner(fio.precondition_argv(SIZE, str(path), False), timeout=600).check()
        measured = tuple(_bandwidth(rw, str(path), ctx) for rw in ("read", "write"))
    mount.device.info["bandwidth"] = measured  # the device outlives its stacks: measure it once
    return measured[0], measured[1]


def _bandwidth(rw: str, path: str, ctx: BuildContext) -> int:
    w = FioWorkload(name=f"calibrate-{rw}", rw=rw, bs=2**20, iodepth=16, size=SIZE, runtime_s=CALIBRATION_S, ramp_s=0)
    result = fio.parse(ctx.runner(fio.argv(w, path, False), timeout=120).check().stdout)
    return int(sum(d.bw_bytes for j in result.jobs for d in j.directions.values()))
