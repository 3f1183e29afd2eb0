"""One row per sample, with the cell's configuration flattened into columns."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from layerbench.report.exporters import EXPORTERS, TABLE_FORMATS
from layerbench.report.kept_export import written
from layerbench.store.read import StoredCell


def samples_with_config(frame: pd.DataFrame, cells: Sequence[StoredCell]) -> pd.DataFrame:
    """``frame`` from Store.samples_frame; config columns such as ``stack.filesystem.type``, ``workload.bs``.

    What ``frame.merge(config, on="cell_id", how="left")`` gives, by taking each sample's cell's row (its
    cell_id is a categorical: one lookup per cell, not a join of a million keys: 2.5 s of a 1M-sample export)."""
    return with_config(frame, cell_config(cells))


def with_config(frame: pd.DataFrame, config: pd.DataFrame) -> pd.DataFrame:
    """``samples_with_config`` given the cells' ``cell_config``."""
    keys = frame["cell_id"]
    at = (
        pd.Index(config["cell_id"]).get_indexer(keys.cat.categories)
        if isinstance(keys.dtype, pd.CategoricalDtype)
        else None
    )
    if at is None or (at < 0).any() or frame.empty:  # not a samples frame's codes, or a cell without configuration
        return frame.merge(config, on="cell_id", how="left")
    extra = config.drop(columns="cell_id").take(at[keys.cat.codes.to_numpy()]).reset_index(drop=True)
    keyed = frame.assign(cell_id=keys.astype(config["cell_id"].dtype))
    return pd.concat([keyed.reset_index(drop=True), extra], axis=1)


def cell_config(cells: Sequence[StoredCell]) -> pd.DataFrame:
    """One row per cell: its id and its configuration flattened into columns."""
    # One json_normalize over every cell: one per cell built 10,000 one-row frames (11 s of a 22 s export).
    config = pd.json_normalize([c.cell.model_dump(mode="json") for c in cells], sep=".")
    config.insert(0, "cell_id", [c.cell_id for c in cells])
    for column in config.columns:
        # Lists (mkfs options) become strings: CSV and Parquet want one type per column.
        if config[column].map(lambda v: isinstance(v, list)).any():
            config[column] = config[column].map(lambda v: " ".join(map(str, v)) if isinstance(v, list) else v)
    return config


def parquet_table(frame: pd.DataFrame, config: pd.DataFrame) -> pa.Table | None:
    """``pa.Table.from_pandas(with_config(frame, config), preserve_index=False)`` (what ``to_parquet``
    writes) without the merged frame: its 40-odd configuration columns of a million Python objects each, then
    converted to Arrow one object at a time, were 2 s of a 1M-sample export. Here the merge is done on one
    sample of each cell (so each column's type and pandas' metadata are what the whole frame gives: the same
    values, the same categories), and Arrow repeats those rows for every sample. None where ``frame`` is not
    a samples frame; then the caller merges."""
    keys = frame["cell_id"]
    if frame.empty or not isinstance(keys.dtype, pd.CategoricalDtype):
        return None
    codes = keys.cat.codes.to_numpy()
    if (codes < 0).any():
        return None
    firsts, of_row = np.unique(codes, return_index=True, return_inverse=True)[1:]
    head = with_config(frame.iloc[firsts], config)
    if list(head.columns[: len(frame.columns)]) != list(frame.columns):
        return None
    whole = pa.Table.from_pandas(head, preserve_index=False)
    mine = pa.Table.from_pandas(frame.drop(columns="cell_id"), preserve_index=False)
    rows = pa.array(of_row.astype(np.int64))
    arrays = [
        mine.column(name) if name in mine.column_names else whole.column(name).take(rows) for name in head.columns
    ]
    try:
        return pa.Table.from_arrays(arrays, schema=whole.schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None  # a column whose type one sample per cell does not show: merged the slow way


def parquet_bytes(frame: pd.DataFrame, config: pd.DataFrame) -> bytes | None:
    """The Parquet file ``write_samples`` writes (``parquet_table``), as bytes; None where it is not a samples
    frame. A few MB, kept with the run by `export` (store/cache.py): repeating each cell's 40 configuration
    columns to a million rows and encoding them again was 1 s of every export."""
    table = parquet_table(frame, config)
    if table is None:
        return None
    out = pa.BufferOutputStream()
    pq.write_table(table, out, compression="snappy")  # as pandas' to_parquet
    return out.getvalue().to_pybytes()


def write_samples(frame: pd.DataFrame, config: pd.DataFrame, fmt: str, path: Path | None, *made: object) -> str:
    """``with_config(frame, config)`` (``config``: the cells' ``cell_config``) written as ``write`` does; a format
    its cache keeps (CSV, Parquet: its exporter's ``kept``) without building it (report/csv_lines.py,
    ``parquet_table``). ``made``: what was built already (kept with the run), of any format: ``fmt`` takes its
    own."""
    kept = EXPORTERS[fmt].kept
    if kept is not None:
        part = next((p for p in made if p is not None and kept.holds(p)), None)
        part = part if part is not None else kept.build(frame, config)
        if part is not None:
            return written(kept.chunks(part), path)
    return write(with_config(frame, config), fmt, path)


def write(table: pd.DataFrame, fmt: str, path: Path | None) -> str:
    """Into ``path``, or standard output without one (as other tools do: ``| duckdb``, ``> file``).

    Returns where it went, for the user's message."""
    frame = EXPORTERS[fmt].frame if fmt in EXPORTERS else None
    if frame is None:
        raise ValueError(f"unknown table format {fmt!r}; formats: {', '.join(TABLE_FORMATS)}")
    frame(table, path)
    if path is None:
        sys.stdout.flush()
    return str(path) if path else "standard output"
