"""Seed 004's table: for each operation, each layer's ratio to its baseline, one column per layer.

Swept workloads (``read-size4M-bs4k`` ...) fold into their operation (``read``)
by the geometric mean of their ratios, the mean that treats ×2 and ×0.5 alike.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from layerbench.analysis.overhead import CellResult

SWEPT = re.compile(r"-(bs|size|numjobs|iodepth|runtime_s|rwmixread|scale)[^-]*")


@dataclass(frozen=True)
class RatioTable:
    rows: list[str]  # operations and personalities
    columns: list[str]  # e.g. "ext4 · docker:overlay2/volume"
    values: dict[tuple[str, str], float]  # geometric mean of the ratios
    points: dict[tuple[str, str], int]  # how many cells each value folds


def operation(workload: str) -> str:
    return SWEPT.sub("", workload)


def ratio_table(results: list[CellResult], cells: list, points: pd.DataFrame | None = None) -> RatioTable:
    """``points``: analysis.surface.iozone_points; an IOzone cell gives a row per operation, folded over its
    surface, instead of one for its geometric-mean headline."""
    config = {c.cell_id: json.loads(c.config_json) for c in cells}
    folded: dict[tuple[str, str], list[float]] = {}
    for r in results:
        iozone = config[r.cell_id]["workload"].get("kind") == "iozone"
        if r.is_baseline or r.ratio.ratio != r.ratio.ratio or iozone:
            continue
        folded.setdefault((operation(r.workload), _column(config[r.cell_id]["stack"])), []).append(r.ratio.ratio)
    for row in (points if points is not None else pd.DataFrame()).itertuples(index=False):
        folded.setdefault((row.op, _column(config[row.cell_id]["stack"])), []).append(row.ratio)
    rows = list(dict.fromkeys(k[0] for k in folded))
    columns = sorted(dict.fromkeys(k[1] for k in folded))
    values = {k: float(np.exp(np.mean(np.log(v)))) for k, v in folded.items()}
    return RatioTable(rows, columns, values, {k: len(v) for k, v in folded.items()})


def _column(stack: dict) -> str:
    column = f"{stack['filesystem']['type']} · {stack['engine']['kind']}"
    column += f":{stack['engine']['driver']}" if stack["engine"].get("driver") else ""
    return column + f"/{stack['placement']['kind']}"
