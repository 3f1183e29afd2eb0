"""What a run may leave on the host, looked up from the outside (not from our own ledger)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def leftovers(work_dir: Path) -> list[str]:
    found: list[str] = []
    work = str(work_dir.resolve())
    for line in Path("/proc/mounts").read_text().splitlines():
        target = line.split()[1]
        if target.startswith(work) or target.startswith("/run/layerbench"):
            found.append(f"mount {target}")
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True, check=False).stdout
    found += [f"loop {line}" for line in loops.splitlines() if work in line]
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        # A daemon of ours, or a database server natively (its data directory is below the work dir).
        if work in cmd or (("dockerd" in cmd or "containerd" in cmd) and "/run/layerbench" in cmd):
            found.append(f"process {proc.name}: {cmd[:120]}")
    return found


def bridges() -> set[str]:
    """Bridge links of Docker networks (br-<id>): a test compares them before and after."""
    return {p.name for p in Path("/sys/class/net").glob("br-*")}
