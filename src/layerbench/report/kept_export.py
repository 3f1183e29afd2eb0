"""A run's export as its cache keeps it, written without pandas.

A big run's end builds its CSV and Parquet exports (report/prepared.py); writing them again needs only the
kept bytes or rows. Importing pandas and reading the run's samples, which only building needs, were a
third of a cached CSV export of a million samples (0.5 s of 1.7 s).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from layerbench.report import csv_lines
from layerbench.store import cache
from layerbench.store.db import Store

TABLE_FORMATS = ("csv", "json", "parquet")  # one row per sample
# and every trial's headline metrics and checks, labelled by cell (report/metrics.py)
FORMATS = (*TABLE_FORMATS, "openmetrics")


def write(store: Store, run_id: str, fmt: str, path: Path | None) -> tuple[str, int] | None:
    """The run's kept ``fmt`` (csv or parquet) written to ``path`` (None: standard output): where it went and
    how many samples; None where the cache keeps no current one (the export builds it then)."""
    data = cache.kept(store, run_id, fmt) if fmt in ("csv", "parquet") else None
    if fmt == "csv" and isinstance(data, csv_lines.Parts):
        return written(csv_lines.joined(data), path), data.rows
    if fmt == "parquet" and isinstance(data, bytes):
        return written([data], path), pq.ParquetFile(pa.BufferReader(data)).metadata.num_rows
    return None


def written(chunks: Iterable[bytes | memoryview], path: Path | None) -> str:
    """``chunks`` written to ``path`` or standard output, each by a thread while the next is made (a write lets
    go of the GIL: writing 360 MB was 0.5 s of a 1M-sample export); one chunk in flight: memory for two.
    Where it went, for the user's message."""
    with open(path, "wb") if path else nullcontext(sys.stdout.buffer) as out, ThreadPoolExecutor(1) as writer:
        pending: Future[int] | None = None
        for chunk in chunks:
            if pending is not None:
                pending.result()
            pending = writer.submit(out.write, chunk)
        if pending is not None:
            pending.result()
    if path is None:
        sys.stdout.flush()
    return str(path) if path else "standard output"
