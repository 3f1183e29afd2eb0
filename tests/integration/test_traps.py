"""The traps preset: both traps flagged, the same cells done right not flagged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.test_run_cli import layerbench

pytestmark = [pytest.mark.requires_root, pytest.mark.requires_fio, pytest.mark.slow]


def test_traps_are_caught_and_honest_cells_pass(tmp_path: Path) -> None:
    dirs = {"db": tmp_path / "r.db", "work": tmp_path / "work", "state": tmp_path / "state"}
    done = layerbench("run", "traps", dirs=dirs)
    assert done.returncode == 0, done.stdout + done.stderr
    cells = json.loads(layerbench("show", "latest", "--json", dirs=dirs).stdout)["cells"]
    flags = {(c["stack_label"], c["workload"]): {f["name"] for f in c["flags"]} for c in cells}
    assert "device-accounting" in flags[("loop(buffered)/ext4/native/host-dir", "RR")]  # page cache
    assert "device-accounting" in flags[("loop/ext4/native/host-dir", "RR-unwritten")]  # holes
    assert "device-accounting" in flags[("loop(buffered)/ext4/native/host-dir", "RR-unwritten")]
    # Done right: no trap flagged. Checks of the host (contended, bottleneck, noisy) depend on what else runs.
    assert not flags[("loop/ext4/native/host-dir", "RR")] & {"device-accounting", "faster-than-physics"}
