"""One row per sample, with the cell's configuration flattened into columns."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from layerbench.store.read import StoredCell

FORMATS = ("csv", "json", "parquet")


def samples_with_config(frame: pd.DataFrame, cells: Sequence[StoredCell]) -> pd.DataFrame:
    """``frame`` from Store.samples_frame; config columns such as ``stack.filesystem.type``, ``workload.bs``."""
    # One json_normalize over every cell: one per cell built 10,000 one-row frames (11 s of a 22 s export).
    config = pd.json_normalize([c.cell.model_dump(mode="json") for c in cells], sep=".")
    config.insert(0, "cell_id", [c.cell_id for c in cells])
    for column in config.columns:
        # Lists (mkfs options) become strings: CSV and Parquet want one type per column.
        if config[column].map(lambda v: isinstance(v, list)).any():
            config[column] = config[column].map(lambda v: " ".join(map(str, v)) if isinstance(v, list) else v)
    return frame.merge(config, on="cell_id", how="left")


def write(table: pd.DataFrame, fmt: str, path: Path | None) -> str:
    """Into ``path``, or standard output without one (as other tools do: ``| duckdb``, ``> file``).

    Returns where it went, for the user's message."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; formats: {', '.join(FORMATS)}")
    if fmt == "parquet":
        table.to_parquet(path or sys.stdout.buffer, index=False)
    elif fmt == "csv":
        table.to_csv(path or sys.stdout, index=False)
    else:
        table.to_json(path or sys.stdout, orient="records", indent=1)
    if path is None:
        sys.stdout.flush()
    return str(path) if path else "standard output"
