#!/usr/bin/env python3
"""Capture /proc/<pid>/mountinfo from real runs into tests/data/mountinfo: capture-mountinfo.py OUT TMP.

Run as root from the checkout (PYTHONPATH=src:.): ext4 on a loop device in TMP; a private dockerd
(overlay2) with a volume container; a private Podman service (overlay) with a writable-layer container
as layerbench makes it and an auto-removed one (the volatile trap); an overlay mounted volatile on the
host by hand. Everything is undone before it returns.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

from tests.integration.test_docker_stack import loop_fs, make_ctx

from layerbench.spec.models import StackSpec
from layerbench.stack.engines import ENGINES, ContainerEngine
from layerbench.stack.image import resolve
from layerbench.stack.target import Mount

EXT4 = ["mkfs.ext4", "-q", "-F", "-E", "nodiscard"]
CELLS = [
    ("docker:overlay2", "volume", "docker-overlay2-volume"),
    ("podman:overlay", "writable-layer", "podman-overlay-writable-layer"),
]


def spec(engine: str, placement: str) -> StackSpec:
    fields = {"device": {"kind": "loop"}, "filesystem": "ext4", "engine": engine, "placement": placement}
    return StackSpec.model_validate(fields)


def mountinfo(pid: int) -> str:
    return Path(f"/proc/{pid}/mountinfo").read_text()


def containers(out: Path, tmp: Path, mount: Mount) -> None:
    for engine, placement, name in CELLS:
        ctx = make_ctx(tmp, "cap-" + uuid.uuid4().hex[:4])
        stack = spec(engine, placement)
        with ENGINES[stack.engine.kind].start(mount, stack.engine, ctx) as running:
            with running.place(mount, stack, 32 << 20, ctx) as t:
                (out / f"{name}.txt").write_text(mountinfo(t.info["pid"]))
            if stack.engine.kind == "podman":
                auto_removed(out, running, ctx)  # type: ignore[arg-type]


def auto_removed(out: Path, running: ContainerEngine, ctx: object) -> None:
    daemon = running.daemon
    image = running.image(resolve(["sleep"]), ctx)  # type: ignore[arg-type]
    options = {"detach": True, "auto_remove": True, "network_mode": "none", "cgroup_parent": daemon.cgroup_parent}
    c = daemon.client.containers.run(image, ["sleep", "infinity"], **options)
    c.reload()
    (out / "podman-overlay-autoremove.txt").write_text(mountinfo(c.attrs["State"]["Pid"]))
    c.remove(force=True)


def host_overlay(out: Path, tmp: Path) -> None:
    """An overlay mounted volatile by hand, as a user might."""
    base = tmp / "ov"
    for d in ("lower", "upper", "work", "merged"):
        (base / d).mkdir(parents=True)
    options = f"lowerdir={base}/lower,upperdir={base}/upper,workdir={base}/work,volatile"
    subprocess.run(["mount", "-t", "overlay", "overlay", "-o", options, str(base / "merged")], check=True, timeout=60)
    try:
        text = Path("/proc/self/mountinfo").read_text().splitlines()
        lines = [line for line in text if str(tmp) in line or " / / " in line]
        (out / "host-overlay-volatile.txt").write_text("\n".join(lines) + "\n")
    finally:
        subprocess.run(["umount", str(base / "merged")], check=True, timeout=60)


def main(out: Path, tmp: Path) -> None:
    with loop_fs(tmp, "ext4", EXT4) as mount:
        containers(out, tmp, mount)
    host_overlay(out, tmp)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
