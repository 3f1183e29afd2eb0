"""The volatile-overlay trap, made on purpose: fio through a whole trial on an overlay mounted with
``volatile`` (fsync a no-op) is flagged by the volatile-mount check; the same overlay without it passes.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from layerbench.run.kinds.single import precondition, run_trial
from layerbench.run.schedule import Trial
from layerbench.spec.models import Cell, FioWorkload, StackSpec
from layerbench.stack.placement import native_placement
from layerbench.stack.target import Mount
from tests.integration.test_docker_stack import loop_fs, make_ctx, sh

EXT4 = ["mkfs.ext4", "-q", "-F", "-E", "nodiscard"]
WORKLOAD = FioWorkload(name="SW", rw="write", bs="4k", size="8MiB", runtime_s=1, ramp_s=0)


@contextmanager
def overlay(base: Mount, volatile: bool) -> Iterator[Mount]:
    """An overlay on the loop filesystem; the trial's device is still the loop device below it."""
    assert base.mountpoint is not None
    root = base.mountpoint / "ov"
    for d in ("lower", "upper", "work", "merged"):
        (root / d).mkdir(parents=True, exist_ok=True)
    options = f"lowerdir={root}/lower,upperdir={root}/upper,workdir={root}/work" + (",volatile" if volatile else "")
    sh("mount", "-t", "overlay", "overlay", "-o", options, str(root / "merged"))
    try:
        yield Mount(base.device, "overlay", root / "merged")
    finally:
        subprocess.run(["umount", str(root / "merged")], check=True, timeout=60)
        subprocess.run(["rm", "-rf", str(root)], check=True, timeout=60)


@pytest.mark.parametrize(("volatile", "status"), [(True, "flag"), (False, "pass")])
@pytest.mark.requires_root
@pytest.mark.requires_fio
def test_a_volatile_overlay_under_the_workload_is_flagged(tmp_path: Path, volatile: bool, status: str) -> None:
    ctx = make_ctx(tmp_path, "t-volatile")
    stack = StackSpec.model_validate(
        {"device": {"kind": "loop"}, "filesystem": "ext4", "engine": "native", "placement": "host-dir"}
    )
    with (
        loop_fs(tmp_path, "ext4", EXT4) as base,
        overlay(base, volatile) as mount,
        native_placement(mount, stack.placement, ctx) as target,
    ):
        prepared = precondition(target, [WORKLOAD])
        record = run_trial(target, Trial(Cell(stack=stack, workload=WORKLOAD), 0), prepared)
    assert record.status == "ok", record.stderr
    [check] = [c for c in record.checks if c.name == "volatile-mount"]
    assert check.status == status, check.detail
    assert ("fsync is a no-op" in check.detail) == volatile
    assert ctx.ledger.live() == []
