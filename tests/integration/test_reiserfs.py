"""reiserfs, seed 004's third filesystem (wu-filesystems' rows): a short fio workload natively and in a
Docker container on the same reiserfs, then nothing left.

Docker's container runs on a volume under the vfs driver: overlay2 needs d_type, which reiserfs never reports
(dockerd refuses it, and so does layerbench, with the reason). Skips with the reason where the kernel lacks
reiserfs (this host: Linux removed it in 6.13) or mkfs.reiserfs is missing; runs in the test VM (Debian 12's
6.1 has the module; the image has reiserfsprogs).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import support
from tests.integration.leftovers import assert_nothing_left, bridges
from tests.unavoidable_skips import cannot

pytestmark = [pytest.mark.requires_root, pytest.mark.requires_fio, pytest.mark.requires_docker, pytest.mark.slow]

SPEC: dict[str, Any] = {
    "name": "reiserfs",
    # vfs copies the tools image (about 90 MB) for the image, the container's init layer and its own:
    # room for three copies and the test file.
    "device": {"kind": "zram", "size": "1GiB"},
    "stacks": [
        {"filesystem": "reiserfs", "engine": "native", "placement": "host-dir"},
        {"filesystem": "reiserfs", "engine": "docker:vfs", "placement": "volume"},
    ],
    # wu-filesystems' IOzone-like random read: synchronous, one pass over the file, direct I/O.
    "workloads": [
        {
            "name": "randread",
            "rw": "randread",
            "bs": "4k",
            "ioengine": "psync",
            "size": "16MiB",
            "time_based": False,
            "runtime_s": 600,
            "ramp_s": 0,
        }
    ],
    "baseline": {"filesystem": "reiserfs", "engine": "native", "placement": "host-dir"},
}


def test_reiserfs_natively_and_in_docker(tmp_path: Path) -> None:
    reason = support.refused(SPEC)
    if reason:
        cannot("reiserfs", reason)
    dirs = {"db": tmp_path / "r.db", "work": tmp_path / "work", "state": tmp_path / "state"}
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    before = bridges()
    done = support.run(["run", str(spec)], dirs, timeout=3600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    shown = json.loads(support.run(["show", "latest", "--json"], dirs).stdout)
    results = {c["stack_label"]: c for c in shown["cells"]}
    assert set(results) == {"zram/reiserfs/native/host-dir", "zram/reiserfs/docker:vfs/volume"}, results
    for label, cell in results.items():
        assert cell["failed"] == 0 and cell["summary"]["n"] == 1 and cell["summary"]["mean"] > 0, (label, cell)
    assert_nothing_left(dirs, before)
