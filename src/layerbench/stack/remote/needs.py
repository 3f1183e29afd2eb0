"""What a storage host, each transport's clients and link shaping need of a host, probed into reasons a user
can act on (each transport declares its own, in its module: ``NEEDS``).

Kernel parts count where they are loaded (/sys/module) or modprobe would load them. Qdiscs are tried,
not inferred: a kernel may build tbf in and leave netem out (this project's CI host does), and neither
shows in /sys/module then. The try happens in a network namespace that dies with the probe's process.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from layerbench.errors import ToolError
from layerbench.proc import Runner
from layerbench.spec.transports import STORAGE_HOST

Loadable = Callable[[str], bool]
SYS_MODULE = Path("/sys/module")
CONFIGFS = Path("/sys/kernel/config")


@dataclass(frozen=True)
class Need:
    """What one feature of HostCaps.remote needs of this host, as a transport's module declares it."""

    binaries: Mapping[str, str]  # each program, and the Debian package that has it
    modules: tuple[str, ...] = ()  # kernel modules, loaded or loadable
    configfs: bool = False  # a kernel target, configured through configfs (mounted at CONFIGFS)
    # A command tried once the rest is there, and what its failure means (a program built without a part).
    tried: tuple[tuple[str, ...], str] | None = None


# What a storage host needs whatever the transport: its namespace, its veth link and tc to shape it.
STORAGE_HOST_NEEDS = Need({"ip": "iproute2", "tc": "iproute2", "unshare": "util-linux", "ethtool": "ethtool"})
QDISC_TRIALS = {
    "netem": ["netem", "delay", "1ms"],
    "tbf": ["tbf", "rate", "1gbit", "burst", "65536", "latency", "50ms"],
}


def probe(runner: Runner, loadable: Loadable, needs: Mapping[str, Need]) -> dict[str, str | None]:
    """Each feature: a storage host's (STORAGE_HOST), those of ``needs`` (each transport's, from its module),
    and the qdiscs netem and tbf; None where this host has it, else why not."""
    gaps: dict[str, str | None] = {STORAGE_HOST: _lacking(STORAGE_HOST_NEEDS, runner, loadable)}
    gaps |= {name: _lacking(need, runner, loadable) for name, need in needs.items()}
    for qdisc, args in QDISC_TRIALS.items():
        gaps[qdisc] = gaps[STORAGE_HOST] or _qdisc_refused(qdisc, args, runner)
    return gaps


def _lacking(need: Need, runner: Runner, loadable: Loadable) -> str | None:
    """What this host lacks of ``need``: a kernel part or a program, then configfs, then the tried command."""
    missing = _missing(need.binaries, need.modules, loadable)
    if missing is None and need.configfs and not CONFIGFS.is_dir():
        return f"its kernel target is configured through configfs, and {CONFIGFS} is not mounted"
    if missing is None and need.tried is not None and runner(list(need.tried[0]), timeout=30).rc != 0:
        return need.tried[1]
    return missing


def _missing(binaries: Mapping[str, str], modules: tuple[str, ...], loadable: Loadable) -> str | None:
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
