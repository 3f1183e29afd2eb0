from __future__ import annotations

import math

from layerbench.analysis.overhead import CellResult
from layerbench.analysis.ratio_table import ratio_table
from layerbench.analysis.stats import Ratio, summarize
from layerbench.spec.matrix import sweep_point, sweep_points
from layerbench.spec.models import Cell, FioWorkload, StackSpec
from layerbench.store.read import StoredCell
from tests.unit.stored import stored_cell

READ = FioWorkload(name="read", rw="read", bs="4k", sweep={"size": ("4M", "64M")})
VARMAIL = FioWorkload(name="varmail-like", personality="varmail-like")


def swept(size: str) -> FioWorkload:
    return FioWorkload(name=f"read-size{size}", rw="read", bs="4k", size=size)


def cell(cell_id: str, fs: str, engine: str, placement: str, w: FioWorkload, ratio: float, base: bool) -> tuple:
    stack = StackSpec.model_validate(
        {"device": {"kind": "loop"}, "filesystem": fs, "engine": engine, "placement": placement}
    )
    row = stored_cell(
        Cell(stack=stack, workload=w), cell_id, cell_id if base else None, sweep_point(w, sweep_points([READ, VARMAIL]))
    )
    result = CellResult(
        cell_id,
        row.stack_label,
        w.name,
        "bw",
        summarize([1.0]),
        Ratio(ratio, math.nan, math.nan, math.nan),
        base,
        0,
        None,
    )
    return row, result


def test_swept_cells_fold_by_geometric_mean_and_baselines_stay_out() -> None:
    pairs: list[tuple[StoredCell, CellResult]] = [
        cell("n1", "ext4", "native", "host-dir", swept("4M"), 1.0, True),
        cell("d1", "ext4", "docker:overlay2", "volume", swept("4M"), 2.0, False),
        cell("d2", "ext4", "docker:overlay2", "volume", swept("64M"), 0.5, False),
        cell("d3", "xfs", "docker:overlay2", "volume", VARMAIL, 0.8, False),
    ]
    table = ratio_table([r for _, r in pairs], [c for c, _ in pairs])
    assert table.rows == ["read", "varmail-like"]
    assert table.columns == ["ext4 · docker:overlay2/volume", "xfs · docker:overlay2/volume"]
    assert table.values[("read", "ext4 · docker:overlay2/volume")] == 1.0  # sqrt(2 * 0.5)
    assert table.points[("read", "ext4 · docker:overlay2/volume")] == 2
    assert table.values[("varmail-like", "xfs · docker:overlay2/volume")] == 0.8
    assert ("read", "ext4 · native/host-dir") not in table.values
