"""The export formats, one ``Exporter`` each, registered once in ``EXPORTERS`` (``export --format``'s choices).

A table format writes one row per sample with the cell's configuration as columns: its pandas writer
(``frame``), and, for CSV and Parquet, the file as a big run's cache keeps it (``kept``: built once from the
samples, written again without pandas). Another format writes the run its own way (``run``: OpenMetrics'
trials). Nothing here imports pandas: a kept export never needs it (tests/unit/test_cli_start.py).
Adding a format is its exporter here and one line in ``EXPORTERS``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from layerbench.report import csv_lines, kept_export
from layerbench.report.kept_export import Kept
from layerbench.store.db import Store

Written = tuple[str, int]  # where it went, and how many of the exporter's unit


@dataclass(frozen=True)
class Exporter:
    name: str
    unit: str  # what it writes one of per row or record, for the user's message
    binary: bool = False  # not for a terminal: a file or a pipe
    # A table format's writer of the merged frame (pandas' own), to a path or standard output (None).
    frame: Callable[[Any, Path | None], None] | None = None
    kept: Kept | None = None  # a table format's file as the run's cache keeps it, under the format's name
    run: Callable[[Store, str, Path | None], Written] | None = None  # a format that writes the run its own way

    def export(self, store: Store, run_ref: str, path: Path | None) -> Written:
        """The run ``run_ref`` written to ``path`` (None: standard output)."""
        return self.run(store, run_ref, path) if self.run is not None else _samples(self, store, run_ref, path)


def _samples(e: Exporter, store: Store, run_ref: str, path: Path | None) -> Written:
    run_id = store.resolve_run(run_ref)
    kept = kept_export.write(store, run_id, e.name, e.kept, path) if e.kept else None
    if kept is not None:
        return kept  # a big run's end made it: pandas is not needed
    from layerbench.report import prepared
    from layerbench.report.export import write_samples

    samples, config, part = prepared.export_parts(store, run_id, e.name)
    return write_samples(samples, config, e.name, path, part), len(samples)


def _parquet_bytes(samples: Any, config: Any) -> bytes | None:
    from layerbench.report.export import parquet_bytes  # pandas, only where the file is built

    return parquet_bytes(samples, config)


def _openmetrics(store: Store, run_ref: str, path: Path | None) -> Written:
    from layerbench.report import metrics
    from layerbench.store.read import load

    data = load(store, run_ref)
    return metrics.write(data, path), len(data.trials)


CSV_KEPT = Kept(
    build=csv_lines.parts,
    holds=lambda data: isinstance(data, csv_lines.Parts),
    chunks=csv_lines.joined,
    rows=lambda data: data.rows,
)
PARQUET_KEPT = Kept(
    build=_parquet_bytes,
    holds=lambda data: isinstance(data, bytes),
    chunks=lambda data: [data],
    rows=lambda data: pq.ParquetFile(pa.BufferReader(data)).metadata.num_rows,
)


# Each table format's pandas writer: to ``path``, or standard output without one (``| duckdb``, ``> file``).
def _csv_frame(table: Any, path: Path | None) -> None:
    table.to_csv(path or sys.stdout, index=False)


def _json_frame(table: Any, path: Path | None) -> None:
    table.to_json(path or sys.stdout, orient="records", indent=1)


def _parquet_frame(table: Any, path: Path | None) -> None:
    table.to_parquet(path or sys.stdout.buffer, index=False)


EXPORTERS: dict[str, Exporter] = {
    "csv": Exporter("csv", "samples", frame=_csv_frame, kept=CSV_KEPT),
    "json": Exporter("json", "samples", frame=_json_frame),
    "parquet": Exporter("parquet", "samples", binary=True, frame=_parquet_frame, kept=PARQUET_KEPT),
    # every trial's headline metrics and checks, labelled by cell (report/metrics.py)
    "openmetrics": Exporter("openmetrics", "trials", run=_openmetrics),
}
TABLE_FORMATS = tuple(name for name, e in EXPORTERS.items() if e.frame is not None)  # one row per sample
