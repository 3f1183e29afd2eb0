"""The skips this kind of machine cannot avoid, in one place, each with why.

CI (CI=true) runs on a Debian 12 VM whose kernel is built without modules to load: what `make setup`
and a tier's make target install is there, what the kernel was built without is not, and no package
can add it. A test that cannot run for want of one of these calls ``cannot``, which skips with the
entry's name in the reason after confirming, as layerbench's own probe does, that this machine lacks
it; where the machine has it, the skip is an ordinary one, and an ordinary skip fails on CI
(tests/skip_policy.py). Nothing else may skip there.
"""

from __future__ import annotations

import functools
import gzip
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

from layerbench.spec.feasibility import HostCaps

TAG = "this machine cannot: "
KERNEL_CONFIG = Path("/proc/config.gz")


@functools.cache
def caps() -> HostCaps:
    """This host as layerbench's feasibility rules see it (once per session: the probe tries qdiscs)."""
    from layerbench import proc
    from layerbench.stack.capabilities import probe

    return probe(proc.run)


def _kernel_lacks(feature: str) -> bool:
    """Whether the remote feature's gap is the kernel's (needs.py says "this kernel has no ..." then;
    a missing package is said otherwise)."""
    reason = caps().remote.get(feature)
    return reason is not None and reason.startswith("this kernel has no")


def kernel_option(name: str) -> bool | None:
    """Whether the running kernel was built with ``name`` (y or m); None where its config is not readable."""
    if not KERNEL_CONFIG.exists():
        return None
    lines = gzip.decompress(KERNEL_CONFIG.read_bytes()).decode().splitlines()
    return f"{name}=y" in lines or f"{name}=m" in lines


@dataclass(frozen=True)
class Unavoidable:
    why: str  # why this kind of machine cannot, and why installing cannot help
    lacks: Callable[[], bool]  # whether this machine lacks it, probed


UNAVOIDABLE: dict[str, Unavoidable] = {
    "device-mapper": Unavoidable(
        "the kernel has no device-mapper (or no dm-thin-pool): Docker's devicemapper driver in both modes"
        " needs its thin pool, and a kernel without modules cannot load one",
        lambda: not (caps().device_mapper and caps().dm_thin),
    ),
    "reiserfs": Unavoidable(
        "the kernel has no reiserfs (Linux 6.13 removed it; a kernel without modules cannot load it)",
        lambda: "reiserfs" not in caps().filesystems,
    ),
    "xfs-v4": Unavoidable(
        "the kernel is built without CONFIG_XFS_SUPPORT_V4, so it cannot mount xfs without ftype (v4 only)",
        lambda: kernel_option("CONFIG_XFS_SUPPORT_V4") is not True,  # unreadable: the failed mount is the proof
    ),
    "nbd": Unavoidable(
        "the kernel has no nbd block driver (CONFIG_BLK_DEV_NBD): the kernel's NBD client cannot attach",
        lambda: _kernel_lacks("nbd-kernel"),
    ),
    "nvme-tcp": Unavoidable(
        "the kernel has no NVMe/TCP host or target (nvme_tcp, nvmet, nvmet_tcp)",
        lambda: _kernel_lacks("nvme-tcp"),
    ),
    "iscsi": Unavoidable(
        "the kernel has no LIO iSCSI target or iSCSI initiator (target_core_mod, iscsi_target_mod, iscsi_tcp)",
        lambda: _kernel_lacks("iscsi"),
    ),
    "netem": Unavoidable(
        "the kernel has no netem qdisc (CONFIG_NET_SCH_NETEM): a link cannot be delayed",
        lambda: _kernel_lacks("netem"),
    ),
}


def tagged(name: str, detail: str) -> str:
    """The reason of a skip for registry entry ``name``."""
    if name not in UNAVOIDABLE:
        raise KeyError(f"{name!r} is not in tests/unavoidable_skips.py's UNAVOIDABLE")
    return f"{TAG}{name}: {detail}"


def named(reason: str) -> str | None:
    """The registry entry a skip's reason names (``tagged``'s), None for any other skip."""
    if not reason.startswith(TAG):
        return None
    name = reason[len(TAG) :].split(":", 1)[0]
    return name if name in UNAVOIDABLE else None


def cannot(name: str, detail: str) -> NoReturn:
    """Skip for want of ``name``, where this machine lacks it; else an ordinary skip (a failure on CI)."""
    if UNAVOIDABLE[name].lacks():
        pytest.skip(tagged(name, detail))
    pytest.skip(f"{detail} (this machine has {name}: the skip is not the kernel's)")
