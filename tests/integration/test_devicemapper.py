"""Docker's devicemapper driver in both modes on the same device, and seed 000's loop-lvm anomaly
caught by the checks: dm-loop ignores O_DIRECT, so loop-lvm's reads come from the page cache.

A random 4k read at low load (RR-L: one job, QD1, O_DIRECT, the file filled first) in the writable
layer: under loop-lvm the zram device beneath the stack moves almost none of fio's bytes, so the
stored device-accounting check flags it; under direct-lvm (a thin pool on a direct-I/O loop device)
the device moves them all, and the check passes. Skips with the reason where the kernel lacks
device-mapper (this host); runs in the test VM (tests/vm/test_modern_host.py).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import support
from tests.integration.leftovers import assert_nothing_left, bridges
from tests.unavoidable_skips import cannot

pytestmark = [pytest.mark.requires_root, pytest.mark.requires_fio, pytest.mark.requires_docker, pytest.mark.slow]

DIRECT_LVM = {"kind": "docker", "driver": "devicemapper", "mode": "direct-lvm"}
SPEC: dict[str, Any] = {
    "name": "devicemapper-modes",
    "device": {"kind": "zram", "size": "1GiB"},
    "stacks": [{"filesystem": "ext4", "engine": ["docker:devicemapper", DIRECT_LVM], "placement": "writable-layer"}],
    # One pass over a 32 MiB file (8192 reads: above the check's 16 MiB floor), however slow the host:
    # the run ends on the state fio reaches, not on a clock.
    "workloads": [
        {
            "name": "RR-L",
            "rw": "randread",
            "bs": "4k",
            "numjobs": 1,
            "iodepth": 1,
            "size": "32MiB",
            "time_based": False,
            "runtime_s": 900,
            "ramp_s": 0,
        }
    ],
}
LOOP_LVM = "zram/ext4/docker:devicemapper(loop-lvm)/writable-layer"
DIRECT = "zram/ext4/docker:devicemapper(direct-lvm)/writable-layer"


def stored(db: Path) -> dict[str, dict[str, Any]]:
    """Per stack: its trial's checks (name → (status, detail)) and the daemon's DriverStatus, as stored."""
    out: dict[str, dict[str, Any]] = {}
    with sqlite3.connect(db) as conn:
        trials = conn.execute(
            "SELECT t.id, c.stack_label, t.status, t.info_json, t.stderr FROM trials t "
            "JOIN cells c ON c.run_id = t.run_id AND c.cell_id = t.cell_id"
        ).fetchall()
        for tid, stack, status, info, stderr in trials:
            checks = conn.execute("SELECT name, status, detail FROM checks WHERE trial_id=?", (tid,)).fetchall()
            status_rows = json.loads(info).get("target", {}).get("driver_status") or []
            out[stack] = {
                "status": status,
                "stderr": stderr[-2000:],
                "checks": {name: (st, detail) for name, st, detail in checks},
                "driver_status": {k: v for k, v in status_rows},
            }
    return out


def test_loop_lvm_reads_the_page_cache_and_device_accounting_flags_it_direct_lvm_passes(tmp_path: Path) -> None:
    reason = support.refused(SPEC)
    if reason:
        cannot("device-mapper", reason)
    dirs = {"db": tmp_path / "r.db", "work": tmp_path / "work", "state": tmp_path / "state"}
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    before = bridges()
    done = support.run(["run", str(spec)], dirs, timeout=3600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    cells = stored(dirs["db"])
    assert set(cells) == {LOOP_LVM, DIRECT}, cells
    loop, direct = cells[LOOP_LVM], cells[DIRECT]
    for label, cell in cells.items():
        print(label, *cell["checks"].get("device-accounting", ()), sep=" | ")  # the figures, for -rP
        assert cell["status"] == "ok", (label, cell["stderr"])
    # Which mode each daemon ran, in its own words: loop-lvm's pool sits on loop files in its data-root,
    # direct-lvm's is the LVM thin pool layerbench built, with deferred removal.
    assert "Data loop file" in loop["driver_status"], loop["driver_status"]
    assert "Data loop file" not in direct["driver_status"], direct["driver_status"]
    assert direct["driver_status"].get("Pool Name", "").endswith("-pool"), direct["driver_status"]
    assert direct["driver_status"].get("Deferred Removal Enabled") == "true", direct["driver_status"]
    # The anomaly, caught; and the honest mode on the same device, not.
    assert loop["checks"]["device-accounting"][0] == "flag", loop["checks"]
    assert direct["checks"]["device-accounting"][0] == "pass", direct["checks"]
    assert_nothing_left(dirs, before)
