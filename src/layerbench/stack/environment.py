"""The host's environment, recorded with every run so unlike runs are not compared."""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
from pathlib import Path
from typing import Any

from layerbench.core.version import VERSION
from layerbench.errors import PrerequisiteError, ToolError
from layerbench.proc import Runner
from layerbench.spec.traits import TRAITS
from layerbench.stack import cgroups
from layerbench.stack.engines.vm import qemu
from layerbench.stack.target import DEFAULT_CACHE
from layerbench.workloads import iozone
from layerbench.workloads.servers import postgres

VERSION_COMMANDS = {
    "fio": ["fio", "--version"],
    # Each engine's own program (Docker's daemon, Podman), as its row in spec/engines/ names it.
    **{t.version[0]: list(t.version) for t in TRAITS.values() if t.version},
    "mkfs.xfs": ["mkfs.xfs", "-V"],
    "mkfs.btrfs": ["mkfs.btrfs", "--version"],
    "fuse-overlayfs": ["fuse-overlayfs", "--version"],
    "redis-server": ["redis-server", "--version"],
    "pgbench": ["pgbench", "--version"],
    "java": ["java", "-version"],
    "qemu": ["qemu-system-x86_64", "--version"],
}


def describe_host(runner: Runner, cache_dir: Path = DEFAULT_CACHE) -> dict[str, Any]:
    return {
        "hostname": platform.node(),
        "kernel": platform.release(),
        "os": _os_release(),
        "cpu_model": _cpu_model(),
        "cpus": os.cpu_count(),
        "memory_bytes": _mem_total(),
        "cgroup": cgroups.version(),
        "init": _init_system(),
        "python": platform.python_version(),
        "layerbench": VERSION,
        "tools": {
            **{name: _version(runner, argv) for name, argv in VERSION_COMMANDS.items()},
            "postgres": _postgres_version(runner),
            "iozone": _iozone_version(runner, cache_dir),
            "vm_image": _vm_image(cache_dir),
        },
        "fio_sha256": _sha256_of("fio"),
    }


def _vm_image(cache_dir: Path) -> str | None:
    """The guest image the vm engine boots (its directory names what went into it), if one is built."""
    image = qemu.find_image(cache_dir)
    return image.directory.name if image else None


def _init_system() -> str:
    """PID 1's name (systemd, or a container's or VM's own init): limits and daemons behave by it."""
    return _read("/proc/1/comm").strip() or "unknown"


def _version(runner: Runner, argv: list[str]) -> str | None:
    if shutil.which(argv[0]) is None:
        return None
    try:
        done = runner(argv, timeout=20)
    except ToolError:
        return None
    text = (done.stdout or done.stderr).strip().splitlines()
    return text[0] if text else None


def _postgres_version(runner: Runner) -> str | None:
    try:
        server = str(postgres.bindir() / "postgres")
    except PrerequisiteError:
        return None
    return _version(runner, [server, "--version"])


def _iozone_version(runner: Runner, cache_dir: Path) -> str | None:
    if iozone.missing(cache_dir):
        return None
    try:
        return iozone.version(runner, str(iozone.binary(cache_dir)))
    except (ToolError, iozone.IozoneParseError):
        return None


def _sha256_of(binary: str) -> str | None:
    path = shutil.which(binary)
    if path is None:
        return None
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _cpu_model() -> str:
    for line in _read("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.machine()


def _mem_total() -> int | None:
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return None


def _os_release() -> str:
    for line in _read("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip('"')
    return platform.system()


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


# What must not change under a run that is resumed: its numbers would not mean the same.
RESUME_KEYS = ("kernel", "cpu_model", "cpus", "fio_sha256")


def host_changes(before: dict[str, Any], now: dict[str, Any]) -> list[str]:
    changes = [f"{k} was {before.get(k)}, is {now.get(k)}" for k in RESUME_KEYS if before.get(k) != now.get(k)]
    tools_before, tools_now = before.get("tools") or {}, now.get("tools") or {}
    changes += [
        f"{tool} was {tools_before.get(tool)}, is {tools_now.get(tool)}"
        for tool in sorted(set(tools_before) | set(tools_now))
        if tools_before.get(tool) != tools_now.get(tool)
    ]
    return changes
