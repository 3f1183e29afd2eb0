"""Capture the sysfs and configfs entries the kernel transports read and write, from real connections.

Run as root where the kernel has nvmet/nvme-tcp and LIO/iscsi_tcp (the test VM): for each, it attaches
a zram device through layerbench's own remote layer and writes OUT/<transport>.json, a map from each
path under the trees below (down to a depth, through sysfs's links) to the text of the attribute files
layerbench reads or writes, or null for a directory. The unit tests rebuild the trees from it
(tests/data/remote/sysfs) and look for the block device there as layerbench does on a live system.

    python tools/capture-remote-sysfs.py tests/data/remote/sysfs
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

from layerbench import proc
from layerbench.run.measure.monitor import nvme_paths
from layerbench.spec.models import DeviceSpec
from layerbench.stack.ledger import Ledger
from layerbench.stack.remote.iscsi import OPEN_TPG
from layerbench.stack.remote.layer import remote_device
from layerbench.stack.remote.nvme_tcp import port_address
from layerbench.stack.target import BuildContext

ATTRIBUTES = {
    "subsysnqn",
    "targetname",
    "transport",
    "attr_allow_any_host",
    "device_path",
    "enable",
    "udev_path",
    "info",
}
ATTRIBUTES |= set(port_address("0.0.0.0")) | set(OPEN_TPG)
SKIP = {"power", "subsystem", "driver", "bdi", "holders", "slaves", "queue", "trace", "mq", "integrity"}
# transport -> the trees its target and client use, and how deep to follow each
TREES = {
    "nvme-tcp": [("sys/class/nvme", 2), ("sys/class/nvme-subsystem", 2), ("sys/kernel/config/nvmet", 6)],
    "iscsi": [("sys/class/iscsi_session", 7), ("sys/kernel/config/target", 7)],
}


def walk(src: Path, rel: str, depth: int, out: dict[str, str | None]) -> None:
    out[rel] = None
    if depth == 0:
        return
    for child in sorted(src.iterdir()):
        name = f"{rel}/{child.name}"
        if child.name in ATTRIBUTES and child.is_file():
            out[name] = child.read_text()
        elif child.is_dir() and child.name not in SKIP:
            walk(child, name, depth - 1, out)


def accounted(dev_path: str, found: dict[str, str | None]) -> None:
    """Read 8 MiB with O_DIRECT, then keep the stat of the device and of its multipath paths: which of
    them counts the I/O is what the device-accounting check must know."""
    proc.run(["dd", f"if={dev_path}", "of=/dev/null", "bs=1M", "count=8", "iflag=direct"], timeout=120).check()
    name = Path(dev_path).name
    for block in [name, *nvme_paths(name)]:
        rel = f"sys/class/block/{block}/stat"
        found[rel] = (Path("/") / rel).read_text()


def capture(transport: str) -> dict[str, str | None]:
    work = Path(tempfile.mkdtemp(prefix="lb-capture-"))
    ctx = BuildContext(work, Ledger(work / "ledger.db", "capture"), "capture", proc.run)
    spec = DeviceSpec.model_validate({"kind": "zram", "size": "64MiB", "remote": {"transport": transport}})
    found: dict[str, str | None] = {}
    with remote_device(spec, ctx) as dev:
        found["device"] = dev.path
        found["backing"] = dev.info["backing"]
        for tree, depth in TREES[transport]:
            walk(Path("/") / tree, tree, depth, found)
        accounted(dev.path, found)
    shutil.rmtree(work)
    return found


if __name__ == "__main__":
    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    for name in TREES:
        (target / f"{name}.json").write_text(json.dumps(capture(name), indent=1, sort_keys=True) + "\n")
