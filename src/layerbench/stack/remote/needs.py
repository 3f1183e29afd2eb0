"""What each transport, client and link shaping needs of a host, probed into reasons a user can act on.

Kernel parts count where they are loaded (/sys/module) or modprobe would load them. Qdiscs are tried,
not inferred: a kernel may build tbf in and leave netem out (this project's CI host does), and neither
shows in /sys/module then. The try happens in a network namespace that dies with the probe's process.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from layerbench.errors import ToolError
from layerbench.proc import Runner

Loadable = Callable[[str], bool]
SYS_MODULE = Path("/sys/module")
CONFIGFS = Path("/sys/kernel/config")

# feature -> (binaries and the Debian package that has them, kernel modules)
NEEDS: dict[str, tuple[dict[str, str], tuple[str, ...]]] = {
    "storage-host": ({"ip": "iproute2", "tc": "iproute2", "unshare": "util-linux", "ethtool": "ethtool"}, ()),
    "nbd": ({"qemu-nbd": "qemu-utils", "nbdinfo": "libnbd-bin"}, ()),
    "nbd-fuse": ({"nbdfuse": "libnbd-bin", "fusermount3": "fuse3"}, ()),  # and FUSE and loop (HostCaps has them)
    "nbd-kernel": ({"nbd-client": "nbd-client"}, ("nbd",)),
    "nbd-fio": ({"fio": "fio"}, ()),  # and fio built with its nbd engine (libnbd): tried below
    "nvme-tcp": ({"nvme": "nvme-cli"}, ("nvmet", "nvmet_tcp", "nvme_tcp")),
    "iscsi": ({"iscsiadm": "open-iscsi"}, ("target_core_mod", "target_core_iblock", "iscsi_target_mod", "iscsi_tcp")),
}
QDISC_TRIALS = {
    "netem": ["netem", "delay", "1ms"],
    "tbf": ["tbf", "rate", "1gbit", "burst", "65536", "latency", "50ms"],
}


def probe(runner: Runner, loadable: Loadable) -> dict[str, str | None]:
    """Each feature (NEEDS, and the qdiscs netem and tbf): None where this host has it, else why not."""
    gaps: dict[str, str | None] = {name: _missing(bins, mods, loadable) for name, (bins, mods) in NEEDS.items()}
    for name in ("nvme-tcp", "iscsi"):
        if gaps[name] is None and not CONFIGFS.is_dir():
            gaps[name] = f"its kernel target is configured through configfs, and {CONFIGFS} is not mounted"
    if gaps["nbd-fio"] is None and runner(["fio", "--enghelp=nbd"], timeout=30).rc != 0:
        gaps["nbd-fio"] = "this fio has no nbd engine (it is built without libnbd)"
    for qdisc, args in QDISC_TRIALS.items():
        gaps[qdisc] = gaps["storage-host"] or _qdisc_refused(qdisc, args, runner)
    return gaps


def _missing(binaries: dict[str, str], modules: tuple[str, ...], loadable: Loadable) -> str | None:
    # The kernel first: installing a package cannot help a kernel that lacks the driver.
    lacking = [m for m in modules if not ((SYS_MODULE / m).exists() or loadable(m))]
    if lacking:
        return f"this kernel has no {', '.join(lacking)} (not loaded, and modprobe finds no such module)"
    absent = [b for b in binaries if shutil.which(b) is None]
    if absent:
        packages = sorted({binaries[b] for b in absent})
        return f"{', '.join(absent)} not installed (apt-get install {' '.join(packages)})"
    return None


def _qdisc_refused(qdisc: str, args: list[str], runner: Runner) -> str | None:
    argv = ["unshare", "--net", "tc", "qdisc", "add", "dev", "lo", "root", *args]
    try:
        done = runner(argv, timeout=30)
    except ToolError as exc:
        return f"tc could not be tried: {exc}"
    if done.rc == 0:
        return None
    said = (done.stderr.strip().splitlines() or ["no reason given"])[0]
    return f"this kernel has no {qdisc} qdisc (tc: {said})"
