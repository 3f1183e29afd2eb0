"""The cluster's processes (started here, stopped by PID), its mounts and cgroups, and waiting on state."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
CGROUP_ROOT = Path("/sys/fs/cgroup")


def start(
    argv: Sequence[str],
    log: Path,
    env: dict[str, str] | None = None,
    clear_env: bool = False,
    before: Callable[[], None] | None = None,
) -> int:
    """``argv`` in its own session, its output in ``log``; its PID (the caller records it). ``env`` is
    added to this process's environment, or with ``clear_env`` is the whole of it; ``before`` runs in
    the child before the exec (a namespace of its own)."""
    with log.open("ab") as out:
        proc = subprocess.Popen(
            list(argv),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            env=dict(env or {}) if clear_env else {**os.environ, **(env or {})},
            preexec_fn=before,  # the cluster tools start daemons from one thread
        )
    return proc.pid


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    if state == "Z":
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        return False
    return True


def stop(pid: int, grace_s: float = 30.0) -> None:
    """SIGTERM, then SIGKILL if it is still there after ``grace_s``."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    try:
        wait_for(lambda: not alive(pid), grace_s, f"process {pid} to exit")
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not alive(pid), 10.0, f"process {pid} to die")


def wait_for(
    ready: Callable[[], T],
    limit_s: float,
    what: str,
    every_s: float = 0.5,
    why: Callable[[], str] | None = None,
) -> T:
    """Poll ``ready`` until it returns something true. ``limit_s`` guards against a hang, not a deadline
    the tests depend on: it is minutes where the thing takes seconds. ``why`` says what the thing is
    doing instead, for the error: CI keeps the message, not the cluster's logs."""
    deadline = time.monotonic() + limit_s
    while True:
        value = ready()
        if value:
            return value
        if time.monotonic() > deadline:
            detail = f": {why()}" if why else ""
            raise TimeoutError(f"gave up waiting for {what} after {limit_s:.0f} s{detail}")
        time.sleep(every_s)


def log_tail(log: Path, lines: int = 3, pattern: str = "") -> list[str]:
    """The last ``lines`` lines of ``log`` that match ``pattern`` (its errors), shortened to be read in an
    error message."""
    try:
        text = log.read_text(errors="replace").splitlines()
    except OSError as e:
        return [f"({log.name} unreadable: {e.strerror})"]
    return [line[:300] for line in text if re.search(pattern, line)][-lines:]


def mounts_under(root: Path) -> list[str]:
    """Mount points at or below ``root``, deepest first."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point == str(root) or point.startswith(f"{root}/"):
            found.append(point)
    return sorted(found, key=len, reverse=True)


def unmount_under(root: Path) -> list[str]:
    left = []
    for point in mounts_under(root):
        gone = subprocess.run(["umount", point], capture_output=True, timeout=60).returncode == 0
        if not gone and subprocess.run(["umount", "-l", point], capture_output=True, timeout=60).returncode != 0:
            left.append(point)
    return left


def cgroup_dirs(name: str) -> list[Path]:
    """``name`` (a top-level cgroup) in every hierarchy: v1's controllers, or v2's one tree."""
    if (CGROUP_ROOT / "cgroup.controllers").exists():
        return [CGROUP_ROOT / name]
    return [d / name for d in sorted(CGROUP_ROOT.iterdir()) if d.is_dir() and not d.is_symlink()]


def make_cgroup(name: str) -> None:
    """The kubelet's cgroup root must exist in every hierarchy before it starts (it checks)."""
    for d in cgroup_dirs(name):
        d.mkdir(exist_ok=True)
        for knob in ("cpuset.cpus", "cpuset.mems"):  # v1's cpuset starts empty: nothing could run in it
            if (d / knob).exists() and not (d / knob).read_text().strip():
                (d / knob).write_text((d.parent / knob).read_text())


def remove_cgroup(name: str) -> list[str]:
    left = []
    for top in cgroup_dirs(name):
        if not top.exists():
            continue
        for d in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                d.rmdir()
        with contextlib.suppress(OSError):
            top.rmdir()
        if top.exists():
            left.append(str(top))
    return left
