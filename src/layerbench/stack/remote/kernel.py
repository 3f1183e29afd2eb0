"""What the kernel transports share: their modules, loaded on first use (a module that is there but not
loaded is common on distribution kernels; one that cannot load is a prerequisite the rules should have
seen), and reading sysfs for the block device a connection made."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from layerbench.errors import PrerequisiteError
from layerbench.proc import Runner
from layerbench.stack.device import read_or_empty

SYS_BLOCK = Path("/sys/block")


def load(modules: tuple[str, ...], runner: Runner) -> None:
    for module in modules:
        if Path("/sys/module", module.replace("-", "_")).exists():
            continue
        done = runner(["modprobe", module], timeout=60)
        if done.rc != 0:
            raise PrerequisiteError(f"modprobe {module} failed: {done.stderr.strip() or done.rc}")


def appeared(
    names: Callable[[], list[str]],
    limit_s: float,
    waited_for: str,
    dev: Path = Path("/dev"),
    sys_block: Path = SYS_BLOCK,
) -> tuple[str, int]:
    """The first of ``names()`` (block device names from sysfs) that udev or devtmpfs has put in /dev and
    whose size sysfs gives, and that size in bytes; polled, because the kernel adds the disk after the client
    returns, and its node in /dev may come before its entry in /sys/block (seen once for an iSCSI disk)."""
    deadline = time.monotonic() + limit_s
    while True:
        for n in names():
            size = read(sys_block / n / "size")
            if (dev / n).exists() and size.isdigit():
                return str(dev / n), int(size) * 512
        if time.monotonic() > deadline:
            raise PrerequisiteError(f"{waited_for}, but no block device appeared in {limit_s:.0f}s")
        time.sleep(0.1)


def children(d: Path) -> list[Path]:
    try:
        return list(d.iterdir())
    except OSError:
        return []


def read(p: Path) -> str:
    return read_or_empty(str(p)).strip()
