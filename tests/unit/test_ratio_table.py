from __future__ import annotations

import json
import math

from layerbench.analysis.overhead import CellResult
from layerbench.analysis.ratio_table import ratio_table
from layerbench.analysis.stats import Ratio, summarize
from layerbench.store.db import CellRow


def cell(cell_id: str, fs: str, engine: str, placement: str, workload: str, ratio: float, base: bool) -> tuple:
    kind, _, driver = engine.partition(":")
    config = {
        "stack": {
            "filesystem": {"type": fs},
            "engine": {"kind": kind, "driver": driver or None},
            "placement": {"kind": placement},
        },
        "workload": {"name": workload},
    }
    row = CellRow(
        cell_id, f"{fs} {workload}", f"loop/{fs}/{engine}/{placement}", workload, json.dumps(config), base, None
    )
    result = CellResult(
        cell_id,
        row.stack_label,
        workload,
        "bw",
        summarize([1.0]),
        Ratio(ratio, math.nan, math.nan, math.nan),
        base,
        0,
        None,
    )
    return row, result


def test_swept_cells_fold_by_geometric_mean_and_baselines_stay_out() -> None:
    pairs = [
        cell("n1", "ext4", "native", "host-dir", "read-size4M-bs4k", 1.0, True),
        cell("d1", "ext4", "docker:overlay2", "volume", "read-size4M-bs4k", 2.0, False),
        cell("d2", "ext4", "docker:overlay2", "volume", "read-size64M-bs4k", 0.5, False),
        cell("d3", "xfs", "docker:overlay2", "volume", "varmail-like", 0.8, False),
    ]
    table = ratio_table([r for _, r in pairs], [c for c, _ in pairs])
    assert table.rows == ["read", "varmail-like"]
    assert table.columns == ["ext4 · docker:overlay2/volume", "xfs · docker:overlay2/volume"]
    assert table.values[("read", "ext4 · docker:overlay2/volume")] == 1.0  # sqrt(2 * 0.5)
    assert table.points[("read", "ext4 · docker:overlay2/volume")] == 2
    assert table.values[("varmail-like", "xfs · docker:overlay2/volume")] == 0.8
    assert ("read", "ext4 · native/host-dir") not in table.values
